"""The generated OpenAPI description, exercised by schemathesis: valid and invalid requests for every
operation, sent with the token to a real `cocoplus serve`, must never produce a server error (5xx)
or a status code, content type or body that the description does not allow."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from cocoplus.core.paths import Layout
from cocoplus.server.app import create_app
from tests.conftest import ENV_PREFIXES
from tests.server.conftest import Served, add_sessions, start_server, stop_background, stop_server, write_backend

pytestmark = pytest.mark.timeout(300)

# The description does not depend on the project: build it in this process (schemathesis' lazy,
# fixture-based loader does not work with this pytest), and check below that the server serves the same.
SPEC = create_app(Layout("/nonexistent/.cocoplus"), token="unused", port=1).app.openapi()
# The event stream never ends; it is covered by test_live.py.
schema = schemathesis.openapi.from_dict(SPEC).exclude(path="/api/v1/events")


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for every operation: a project with sessions and a quick echo backend, in an environment
    isolated like the suite's (own HOME, no COCOPLUS_/runtime variables)."""
    from cocoplus.session.workspace import init

    base = tmp_path_factory.mktemp("fuzz")
    home = base / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)}
    env.update(HOME=str(home), COCOPLUS_OPERATOR="tester")
    (base / "proj").mkdir()
    init(str(base / "proj" / ".cocoplus"))
    layout = Layout(str(base / "proj" / ".cocoplus"))
    write_backend(layout, 0.05)
    add_sessions(layout)
    served = start_server(layout, env=env)
    yield served
    stop_server(served)
    stop_background(layout)


def test_the_server_publishes_this_description(fuzzed: Served) -> None:
    assert httpx.get(fuzzed.url + "/api/v1/openapi.json").json() == SPEC


@schema.parametrize()
@settings(max_examples=25, suppress_health_check=list(HealthCheck), deadline=None)
def test_no_server_errors(case: Any, fuzzed: Served) -> None:
    case.call_and_validate(
        base_url=fuzzed.url,
        headers=fuzzed.auth,
        checks=[not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance],
    )
