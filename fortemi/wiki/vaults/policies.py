"""Storing a vault's access files as policies, and saying what each one will do.

A vault's ``_access.yaml`` is stored as its project's (this memory) or skill's (every
memory: skills are shared by design) policy when the caller may administer policies,
else reported and skipped. Never widened: what the file says is what is stored. What
the sync reports beside it, as warnings naming the file:

* ``skill_policy_shared``: a skill's policy was stored, and it decides that skill in every
  memory, not only the one synced into;
* ``policy_overridden``: a policy file of the server (``FORTEMI_POLICY_DIR``) governs the
  resource, so the stored one is not in force (file policies win over stored ones);
* ``policy_closes_writes``: the policy states no ``write`` (or ``delete``) action and grants
  no one, so once in force only the memory's admins change (or delete) the notes it
  governs, and only by syncing the vault (``memory_admin_import``): nobody edits them
  through the API and nobody else's sync may change them. Only ``read`` follows a
  policy's top-level rules; every other action needs its own entry under ``actions:``.

The same advice is given on the next sync when a note is then refused for
``action_not_in_policy`` (:func:`closed_action_hint`).
"""

from __future__ import annotations

from fortemi.auth.decision import Action, Decision, Resource, ResourceType
from fortemi.auth.policy import PolicyService
from fortemi.auth.policy.model import Policy
from fortemi.platform.errors import BadUserInput
from fortemi.wiki.vaults.files import ACCESS_FILE, AccessFile, FileKind, VaultProblem
from fortemi.wiki.vaults.models import AccessGate, FileOutcome, FileResult, SyncReport

__all__ = ["apply_policies", "closed_action_hint"]

_CHANGES = (Action.WRITE, Action.DELETE)
_FILE_SOURCE = "file:"


def _what(resource_type: ResourceType, name: str | None) -> str:
    return f"{resource_type.value} {name}"


def _vault_file(resource: Resource) -> str | None:
    """Where a vault keeps the policy of ``resource``, if it can keep one."""
    if resource.type is ResourceType.PROJECT:
        return f"projects/{resource.name}/{ACCESS_FILE}"
    if resource.type is ResourceType.SKILL:
        return f"shared/skills/{resource.name}/{ACCESS_FILE}"
    return None


def _example(actions: list[Action]) -> str:
    rules = ", ".join(f"{a.value}: {{required_role: editor}}" for a in actions)
    return f"`actions: {{{rules}}}`"


def closed_action_hint(denied: Decision) -> str:
    """How to open an action a policy does not state (``action_not_in_policy``)."""
    resource = denied.resource
    source = denied.policy_source or ""
    if source.startswith(_FILE_SOURCE):
        where = f"the server's policy file {source[len(_FILE_SOURCE) :]} (FORTEMI_POLICY_DIR)"
    else:
        file = _vault_file(resource)
        where = "the memory's policy (setPolicy)" if file is None else f"the vault's {file}"
    return (
        f"its policy states no {denied.action.value} action, so only the memory's admins "
        f"may {denied.action.value} its notes, by syncing; add {_example([denied.action])} "
        f"to {where} "
        "(whoever its access_level admits, with that role, may then; README: Syncing a vault)"
    )


def _closed(policy: Policy) -> list[Action]:
    """The actions that ``policy`` lets no one take on its notes."""
    grants = (
        policy.grant_subjects,
        policy.grant_groups,
        policy.grant_roles,
        policy.grant_permissions,
    )
    if any(grants):
        return []  # its grantees may: a grant allows every action
    return [action for action in _CHANGES if not policy.states(action)]


async def apply_policies(
    policies: PolicyService,
    report: SyncReport,
    memory: str,
    files: list[AccessFile],
    gate: AccessGate,
    actor: str,
    dry_run: bool,
) -> None:
    (decision,) = await gate.decide_all([(Action.ADMIN, Resource.system())])
    kept: list[tuple[AccessFile, Policy, bool]] = []  # (file, policy, stored by this sync)
    for file in files:
        scope = None if file.resource_type is ResourceType.SKILL else memory
        if not decision.allowed:
            report.skip(
                VaultProblem(
                    file.path,
                    "policy_not_applied",
                    f"not applied: storing policies needs the admin action on the system "
                    f"resource ({decision.reason})",
                    severity="warning",
                ),
                FileKind.ACCESS,
            )
            continue
        try:
            policy = policies.validate(file.resource_type, scope, file.name, file.document)
            stored = await policies.get(file.resource_type, scope, file.name)
            if stored is not None and stored.document == file.document:
                report.results.append(FileResult(file.path, FileKind.ACCESS, FileOutcome.UNCHANGED))
                kept.append((file, policy, False))
                continue
            if not dry_run:
                await policies.put(file.resource_type, scope, file.name, file.document, actor=actor)
        except BadUserInput as exc:
            report.skip(VaultProblem(file.path, "bad_policy", exc.message), FileKind.ACCESS)
            continue
        report.results.append(FileResult(file.path, FileKind.ACCESS, FileOutcome.APPLIED))
        kept.append((file, policy, True))
    if kept:
        await _warn(policies, report, memory, kept)


async def _warn(
    policies: PolicyService,
    report: SyncReport,
    memory: str,
    kept: list[tuple[AccessFile, Policy, bool]],
) -> None:
    in_force = await policies.snapshot()
    for file, policy, applied in kept:
        what = _what(file.resource_type, file.name)
        if applied and file.resource_type is ResourceType.SKILL:
            report.problems.append(
                VaultProblem(
                    file.path,
                    "skill_policy_shared",
                    f"applies to {what} in every memory, not only {memory}: skills are "
                    "shared by every memory",
                    severity="warning",
                )
            )
        winner = in_force.lookup(Resource(file.resource_type, file.name, memory))
        if winner is not None and winner.source.startswith(_FILE_SOURCE):
            report.problems.append(
                VaultProblem(
                    file.path,
                    "policy_overridden",
                    f"stored, but not in force: the server's policy file "
                    f"{winner.source[len(_FILE_SOURCE) :]} decides {what} (policy files "
                    "win over stored policies)",
                    severity="warning",
                )
            )
            continue
        closed = _closed(policy)
        if closed:
            names = " or ".join(a.value for a in closed)
            report.problems.append(
                VaultProblem(
                    file.path,
                    "policy_closes_writes",
                    f"states no {names} action, so only the memory's admins may {names} "
                    f"the notes of {what}, and only by syncing this vault; add "
                    f"{_example(closed)} to let others (README: Syncing a vault)",
                    severity="warning",
                )
            )
