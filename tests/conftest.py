"""Shared test fixtures."""

from __future__ import annotations

import pytest

from sample_data import make_data  # noqa: F401  (re-exported for tests)


@pytest.fixture(params=["continuous", "discrete", "coarse", "rare", "wide"])
def dist(request):
    return request.param
