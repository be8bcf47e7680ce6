"""The error codes of the Lua scripts (``SDERR <CODE> <detail>``) and the exception each becomes.

The one list of codes: the scripts in lua/ answer only these, and the table in docs/keys.md
lists the same (tests/unit/test_replies.py checks both).
"""

from __future__ import annotations

from collections.abc import Callable

from ..base.errors import (
    ConfigError,
    GroupNotFound,
    LayoutError,
    ScriptError,
    StreamdelayError,
    ValidationError,
)


def _at_in_past(script: str, detail: str, message: str) -> StreamdelayError:
    return ValidationError(
        f"at: due time of job {detail!r} is further in the past than the queue's "
        f"past_tolerance allows (default 1h); give a later time, or a delay to run it now, "
        f"or a larger past_tolerance (a Queue option) to backfill old jobs",
        field="at",
        job_id=detail,
        script=script,
    )


def _no_group(script: str, detail: str, message: str) -> StreamdelayError:
    return GroupNotFound(f"group: no such consumer group on topic {detail!r}", topic=detail)


def _group_taken(script: str, detail: str, message: str) -> StreamdelayError:
    topic, _, other = detail.partition(" ")
    return ConfigError(
        f"group: topic {topic!r} is already served by group {other!r}; one group per topic "
        f"(see docs/concepts.md)",
        field="group",
        topic=topic,
    )


def _wrong_type(script: str, detail: str, message: str) -> StreamdelayError:
    key, _, rest = detail.partition(" ")  # detail: "<key> <type> script: ..."
    return ScriptError(
        f"redis: key {key} holds a {rest.split(' ', 1)[0]} written by another client, not what "
        f"streamdelay keeps there (see docs/keys.md); nothing was written", script=script)


def _layout(script: str, detail: str, message: str) -> StreamdelayError:
    key, _, found = detail.partition(" ")
    return LayoutError(
        f"layout: queue key {key} says record layout {found.split(' ', 1)[0]!r}, which this "
        f"release cannot write; it will not serve this queue. Run a release that reads it "
        f"(docs/operations.md#upgrading-a-running-queue)", field="layout", script=script)


def _no_parent(script: str, detail: str, message: str) -> StreamdelayError:
    return ValidationError(
        f"after: no such job {detail.split(' ', 1)[0]!r}: never enqueued, or it ended before "
        f"the queue kept outcomes or longer ago than it keeps them (docs/workflows.md)",
        field="after", job_id=detail.split(" ", 1)[0], script=script)


def _batch_closed(script: str, detail: str, message: str) -> StreamdelayError:
    return ValidationError(
        f"id: batch {detail.split(' ', 1)[0]!r} is closed: no member can be added "
        f"(docs/workflows.md#batches)", field="id", script=script)


def _batch_callbacks(script: str, detail: str, message: str) -> StreamdelayError:
    return ValidationError(
        f"on_success: batch {detail.split(' ', 1)[0]!r} exists with other callbacks; "
        f"callbacks are set by the call that opens a batch (docs/workflows.md#batches)",
        field="on_success", script=script)


def _unknown(script: str, detail: str, message: str) -> StreamdelayError:
    return ScriptError(f"script {script} failed: {message}", script=script)


# Every error code a script may answer (``SDERR <CODE> <detail>``) and what it becomes: the one
# list; the Lua scripts and the table in docs/keys.md follow it (tests/unit/test_replies.py checks).
SCRIPT_ERRORS: dict[str, Callable[[str, str, str], StreamdelayError]] = {
    "AT_IN_PAST": _at_in_past,  # <id>: an absolute due time too far in the past, nothing written
    "NO_GROUP": _no_group,  # <topic>: the topic's stream or consumer group does not exist
    "GROUP_TAKEN": _group_taken,  # <topic> <group>: the topic belongs to another group
    "BAD_ARGS": _unknown,  # the ARGV do not follow the script's contract (a client bug)
    "WRONG_TYPE": _wrong_type,  # <key> <type> ...: a key holds another type, nothing written
    "LAYOUT": _layout,  # <meta key> <layout>: a record layout this release does not know
    "PROMOTE_FAILED": _unknown,  # <key> <error>: the first job of a batch could not be moved
    "NO_PARENT": _no_parent,  # <id>: a parent the queue does not know, nothing written
    "BATCH_CLOSED": _batch_closed,  # <id>: members for a closed batch, nothing written
    "BATCH_CALLBACKS": _batch_callbacks,  # <id>: other callbacks for a batch, nothing written
}


def _gone(command: str, detail: str, message: str) -> StreamdelayError:
    return GroupNotFound(f"group: {command} found no consumer group or stream ({message})")


# Redis's own error codes (the first word of an error reply) a consumer acts on: NOGROUP (the
# group or its stream does not exist) and UNBLOCKED (a blocking read's stream or group was
# deleted while it waited: data lost, FLUSHALL) both mean "register again".
REDIS_ERRORS: dict[str, Callable[[str, str, str], StreamdelayError]] = {
    "NOGROUP": _gone,
    "UNBLOCKED": _gone,
}


def error_from_command(command: str, message: str) -> StreamdelayError:
    """Map a plain command's error reply to the matching exception, by its error code."""
    code, _, detail = message.partition(" ")
    known = REDIS_ERRORS.get(code)
    if known is not None:
        return known(command, detail, message)
    return StreamdelayError(f"redis: {command} failed: {message}")


def error_from_script(script: str, message: str) -> StreamdelayError:
    """Map a Lua error reply (``SDERR <CODE> <detail>``) to the matching exception."""
    text = message.split("SDERR ", 1)[1] if "SDERR " in message else message
    code, _, detail = text.partition(" ")
    return SCRIPT_ERRORS.get(code, _unknown)(script, detail, message)
