"""The generated OpenAPI description, exercised by schemathesis with every check it has: valid and invalid
requests for every operation, sent with the token to a real `cocoplus serve`, must never produce a server
error (5xx), a status code, content type, header or body that the description does not allow, a request the
description allows that the server refuses or one it forbids that the server takes, a 405 whose `Allow`
header is not the route's methods, or an answer without the token where the description asks for it.

The run is repeatable and bounded: an explicit seed, Hypothesis derandomized and without its example
database, and at most MAX_EXAMPLES generated requests per operation (beside the coverage phase's own)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import CHECKS, is_check_class, load_all_checks
from schemathesis.config import SchemathesisConfig

from cocoplus.core.paths import Layout
from cocoplus.server.app import create_app
from tests.conftest import ENV_PREFIXES
from tests.server.conftest import Served, add_sessions, start_server, stop_background, stop_server, write_backend

pytestmark = pytest.mark.timeout(300)

MAX_EXAMPLES = 25
SEED = 31
# The scope routes refuse only/except when no id names a session of the project (400, "at least one valid
# session id"; tests/server/test_api.py): which ids those are is the project's state, which no description
# can say. Everything else about these two routes is held to the description.
STATE_DEPENDENT = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
CONFIG = SchemathesisConfig.from_dict(
    {
        "seed": SEED,
        "generation": {"deterministic": True, "database": "none", "max-examples": MAX_EXAMPLES},
        "operations": [
            {
                "include-path": path,
                "include-method": "POST",
                "checks": {"positive_data_acceptance": {"expected-statuses": STATE_DEPENDENT}},
            }
            for path in ("/api/v1/coding-sessions/supervision-scope", "/api/v1/session-os/main-brain/autonomous")
        ],
    }
)

# The description does not depend on the project: build it in this process (schemathesis' lazy,
# fixture-based loader does not work with this pytest), and check below that the server serves the same.
SPEC = create_app(Layout("/nonexistent/.cocoplus"), token="unused", port=1).app.openapi()
# The event stream never ends; it is covered by test_live.py.
schema = schemathesis.openapi.from_dict(SPEC, config=CONFIG).exclude(path="/api/v1/events")


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


@pytest.mark.slow
def test_the_server_publishes_this_description(fuzzed: Served) -> None:
    assert httpx.get(fuzzed.url + "/api/v1/openapi.json").json() == SPEC


load_all_checks()
# Every check of a single request (the class-based ones follow links between requests: stateful runs only).
ALL_CHECKS = [c for c in CHECKS.get_all() if not is_check_class(c)]


def test_every_check_runs() -> None:
    names = {c.__name__ for c in ALL_CHECKS}
    assert {
        "not_a_server_error", "status_code_conformance", "content_type_conformance", "response_headers_conformance",
        "response_schema_conformance", "negative_data_rejection", "positive_data_acceptance",
        "missing_required_header", "unsupported_method", "allow_header_conformance", "ignored_auth",
    } <= names  # fmt: skip
    assert CONFIG.seed == SEED and CONFIG.has_explicit_seed


@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES, suppress_health_check=list(HealthCheck), deadline=None, derandomize=True, database=None
)
def test_no_server_errors(case: Any, fuzzed: Served) -> None:
    case.call_and_validate(base_url=fuzzed.url, headers=fuzzed.auth, checks=ALL_CHECKS)
