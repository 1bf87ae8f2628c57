"""Shared test fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["continuous", "discrete", "coarse", "rare", "wide"])
def dist(request):
    return request.param
