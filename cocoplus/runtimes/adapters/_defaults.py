"""What an adapter does where its runtime offers nothing: the defaults every adapter may take.

An adapter imports from here the members its runtime does not have (it is not
launched, resumed or priced by cocoplus, it asks no permission, it reports no
limit) and declares only what differs, as pre-commit's languages take theirs
from `lang_base`.  What each member means is written once, on the protocol
(`cocoplus.runtimes.protocol.Adapter`).  Not an adapter itself: the registry
lists only the modules whose names do not begin with `_`.  Standard library only (the hook
imports the adapter named by `--runtime`, and with it this module).
"""

from cocoplus.runtimes import answers

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Mapping
    from typing import Any

# Where it runs and who is talking
SESSION_ENV: "tuple[str, ...]" = ()
ENV_FILE = None
HOSTS: "tuple[str, ...]" = ()

# What cocoplus's sandbox keeps for a runtime it never launches: nothing
SANDBOX_STATE: "tuple[tuple[str | None, str, str], ...]" = ()
SANDBOX_READONLY: "tuple[tuple[str | None, str, str], ...]" = ()
SANDBOX_CREDENTIALS: "tuple[tuple[str | None, str, str], ...]" = ()
SANDBOX_ENV: "tuple[str, ...]" = ()
MODEL_ENDPOINTS: "tuple[tuple[str, str], ...]" = ()

# How it is installed
SETTINGS_DEFAULTS: "dict[str, Any]" = {}
SLASH_COMMAND_DIR = None
PLUGIN = None  # its hooks go into the project's hook file
PLUGIN_LOG = None

# A missing answer lets the tool run
FAILS_CLOSED = False

# Turn ends, resumes, launches, permissions and limits of a runtime cocoplus never runs headless
ENDS_WITH_PROCESS = False
HOOKS_NEED_REVIEW = False
NO_SESSION_WORDS: "tuple[str, ...]" = ()
ASKS_PERMISSION = False
RULE_TOOLS: "dict[str, str]" = {}
USAGE = None
PROVIDER = None


def recognise(environ: "Mapping[str, str]") -> bool:
    return False


hooks_unreviewed = answers.nothing  # it runs a project's hooks without a review


def settings_notes(settings: "Mapping[str, Any]") -> "list[str]":
    return []


def plugin_active(environ: "Mapping[str, str]") -> "str | None":
    return None  # no plugin form


def asks_for_write(payload: "Mapping[str, Any]", project: str, home: str) -> bool:
    return False  # never routed through cocoplus's permission event: hook/guard.py refuses a protected write


deny_permission = answers.nothing
allow_permission = answers.nothing
notice = answers.nothing
ask_person = answers.nothing  # its permission requests come through a permission event, or not at all


pass_answer = answers.nothing  # nothing to say is said with nothing
tool_call = answers.tool_call


def continue_cap(environ: "Mapping[str, str]") -> "int | None":
    return None  # none of its own


def resume_argv(
    program: "list[str]", session_id: str, instruction: str, argv: "list[str] | None"
) -> "list[str] | None":
    return None  # no headless resume: a dispatch to an exited session stays queued


def launch_argv(program: "list[str]", task: str, model: "str | None", effort: "str | None") -> "list[str] | None":
    return None  # no headless mode: `cocoplus launch` does not start it


def helper_programs(program: str) -> "dict[str, str]":
    return {}


def granted_argv(paths: "list[str]") -> "list[str]":
    return []  # no sandbox of its own inside cocoplus's


def permission_argv(allow: "list[str]", deny: "list[str]") -> "list[str]":
    return []


def stream_entries(event: "Mapping[str, Any]") -> "list[dict[str, Any]] | None":
    return None  # never run headless by cocoplus: its output is shown line by line as it is


def limit_of(kind: str, payload: "Mapping[str, Any]") -> "dict[str, Any] | None":
    return None  # no hook event of its own reports a limit


def output_limit(event: "Mapping[str, Any]") -> "dict[str, Any] | None":
    return None


def output_session(event: "Mapping[str, Any]", environ: "Mapping[str, str]") -> "dict[str, Any] | None":
    return None  # its hooks record its session (SessionStart): never needed from its output


def controller_argv(
    program: "list[str]", model: "str | None", effort: "str | None", brain: "Mapping[str, Any] | None", reply: str
) -> "list[str] | None":
    return None  # not a controller kind (cocoplus/controllers)


def controller_reply(code: int, stdout: str, reply: str) -> "str | None":
    return None
