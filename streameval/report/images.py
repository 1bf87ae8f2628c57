"""What every report with an HTML page can also do: write its plots as image files."""

from __future__ import annotations

from typing import Any

__all__ = ["ImageOutput"]


class ImageOutput:
    """Mixin of :class:`~streameval.report.Report` and :class:`~streameval.report.MulticlassReport`."""

    def to_png(self, directory: Any, format: str = "png", scale: float = 2.0) -> list[Any]:
        """Write each plot of the HTML page as an image file in ``directory`` (``roc.png``, ...),
        rendered by vl-convert without a browser; see :func:`streameval.report.html.write_images`.

        Parameters
        ----------
        directory : path-like
            Created if missing.
        format : {"png", "svg"}, default "png"
        scale : float, default 2.0
            PNG pixel density (2: a 320 x 260 chart is 640 x 520 pixels).

        Returns
        -------
        list of pathlib.Path
            The files written, in page order.

        Raises
        ------
        ValueError
            Unknown format.
        ImportError
            Altair or vl-convert-python is missing (``pip install "streameval[html]"``).
        """
        from .html import write_images

        return write_images(self, directory, format, scale)
