import pytest

from observe_captured import SCENARIOS


@pytest.fixture(params=SCENARIOS)
def scenario(request) -> str:
    return request.param
