"""An event destination's `target`, checked: exactly one kind of target, AWS targets with
exactly one of `auth.role` / `auth.creds`, and the credential each kind carries split off the
rest, so it can be stored sealed and shown only as `""` (pure; no database)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from tunnelgw.core.errors import ApiError, Code

DEFAULT_FORMAT = "json"
# Target kind -> the path of its credential inside the kind's object (write-only).
AWS_KINDS = ("firehose", "kinesis", "cloudwatch_logs")
KINDS = (*AWS_KINDS, "datadog", "azure_logs_ingestion")
AWS_SECRET = ("auth", "creds", "aws_secret_access_key")
CREDENTIALS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(AWS_KINDS, AWS_SECRET),
    "datadog": ("api_key",),
    "azure_logs_ingestion": ("client_secret",),
}
# Optional fields shown as "" when unset (clients read every field of a kind).
OPTIONAL = {"datadog": ("ddtags", "service", "ddsite")}


@dataclass(frozen=True)
class Target:
    """A checked target: its kind, its object with the credential blanked (`""`), and the
    credential given (None when the kind has none here, `""` when the request left it out)."""

    kind: str
    public: dict[str, Any]
    credential: str | None

    def api(self) -> dict[str, Any]:
        return {self.kind: self.public}


def checked_format(value: str | None) -> str | None:
    """The format to store, as given (the schema admits `json` in any case); None for unset
    (`""`, null)."""
    return value or None


def checked_target(target: dict[str, Any]) -> Target:
    """The one kind of `target` (the others absent or null), its AWS auth checked, its
    credential split off. ApiError(400) naming the field at fault."""
    given = [kind for kind in KINDS if target.get(kind) is not None]
    if len(given) != 1:
        found = ", ".join(given) if given else "none"
        raise ApiError(
            Code.INVALID_EVENT_TARGET,
            f"target must set exactly one of {', '.join(KINDS)} (the others absent or null); "
            f"it sets {found}.",
            context={"targets_given": str(len(given))},
            field="target",
        )
    kind = given[0]
    public = dict.fromkeys(OPTIONAL.get(kind, ()), "") | copy.deepcopy(target[kind])
    if kind in AWS_KINDS:
        _check_aws_auth(kind, public.get("auth"))
    return Target(kind, public, _take_credential(kind, public))


def _check_aws_auth(kind: str, auth: dict[str, Any] | None) -> None:
    methods = [name for name in ("role", "creds") if (auth or {}).get(name) is not None]
    if len(methods) != 1:
        raise ApiError(
            Code.INVALID_AWS_AUTH,
            f"target.{kind}.auth must set exactly one of role (an IAM role ARN to assume) or "
            f"creds (an access key id and secret); it sets {' and '.join(methods) or 'none'}.",
            context={"given": str(len(methods))},
            field=f"target.{kind}.auth",
        )


def _take_credential(kind: str, public: dict[str, Any]) -> str | None:
    """Blank the credential of `public` in place; what it held (None if there is no place
    for one: an AWS target authenticating with a role)."""
    *parents, leaf = CREDENTIALS[kind]
    holder: Any = public
    for name in parents:
        holder = holder.get(name) if isinstance(holder, dict) else None
    if not isinstance(holder, dict):
        return None
    value = holder.get(leaf) or ""
    holder[leaf] = ""
    return str(value)


def credential_field(target: Target) -> str:
    """The dotted body field of the target's credential (for error details)."""
    return ".".join(("target", target.kind, *CREDENTIALS[target.kind]))


def require_credential(target: Target) -> None:
    """ApiError(400 ERR_MISSING_FIELD) when the target has a place for a credential and the
    request left it empty."""
    if target.credential == "":
        field = credential_field(target)
        raise ApiError(
            Code.MISSING_FIELD,
            f"{field} is required: it is write-only, so send it whenever the target is new.",
            field=field,
        )


def check_create(body: dict[str, Any]) -> None:
    """The cross-field rules of a create body (`x-check: event-destination-create`)."""
    target = body.get("target")
    if target is None:
        raise ApiError(
            Code.MISSING_FIELD,
            f"target is required: set exactly one of {', '.join(KINDS)}.",
            field="target",
        )
    require_credential(checked_target(target))


def check_update(body: dict[str, Any]) -> Target | None:
    """The rules of an update body's target, when it has one (`x-check:
    event-destination-update`); whether its empty credential may stay is the handler's."""
    target = body.get("target")
    return None if target is None else checked_target(target)
