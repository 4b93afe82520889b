"""The job's role credentials (coordinator/base/job_roles.h, job_token.h), for the Coordination
service this package serves: a call carries "authorization: Bearer <credential>"; the server knows
only the SHA-256 verifiers of each role's credential and tells the caller's role from them.
"""
import hashlib
import hmac
import pathlib
from typing import Dict, Optional

ROLES = ("coordinator", "worker", "ps", "control")


def derive_role_credential(job_secret: str, role: str) -> str:
    """HMAC-SHA256(key = job secret, message = "tj.v1/role/<role>"), hex (job_roles.h)."""
    return hmac.new(job_secret.encode(), f"tj.v1/role/{role}".encode(), hashlib.sha256).hexdigest()


def verifier(credential: str) -> str:
    return hashlib.sha256(credential.encode()).hexdigest()


def parse_verifiers(text: str, source: str) -> Dict[str, str]:
    """"<role> <sha256 hex>" per line, every role exactly once; errors name the file and line."""
    verifiers: Dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        where = f"{source}:{number}"
        if len(fields) != 2:
            raise ValueError(f'{where}: expected "<role> <sha256 hex>", got "{line.strip()}"')
        role, digest = fields
        if role not in ROLES:
            raise ValueError(f'{where}: unknown role "{role}" ({", ".join(ROLES)})')
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise ValueError(f"{where}: the verifier of role {role} is not 64 lower-case hex digits")
        if role in verifiers:
            raise ValueError(f"{where}: role {role} appears twice")
        verifiers[role] = digest
    for role in ROLES:
        if role not in verifiers:
            raise ValueError(f"{source}: no verifier for role {role}")
    return verifiers


class Authenticator:
    """Tells which role a presented credential is. Modes as job_token.h: verifiers; one shared
    token (any role); neither (open: every call passes)."""

    def __init__(self, verifiers: Optional[Dict[str, str]], shared_token: Optional[str]):
        self._verifiers = verifiers
        self._shared = shared_token

    @classmethod
    def from_files(cls, token_file: Optional[str], verifiers_file: Optional[str],
                   token: Optional[str] = None) -> "Authenticator":
        verifiers = None
        if verifiers_file:
            path = pathlib.Path(verifiers_file)
            try:
                text = path.read_text()
            except OSError as error:
                raise ValueError(f"cannot read the job's verifiers {path}: {error}") from None
            verifiers = parse_verifiers(text, str(path))
        shared = None
        if verifiers is None:
            if token_file:
                try:
                    shared = pathlib.Path(token_file).read_text().strip()
                except OSError as error:
                    raise ValueError(f"cannot read the job token {token_file}: {error}") from None
            else:
                shared = token
        return cls(verifiers, shared)

    @property
    def open(self) -> bool:
        return self._verifiers is None and not self._shared

    def role_of(self, metadata) -> Optional[str]:
        """The caller's role ("any" when roles are not told apart), or None: not authenticated."""
        if self.open:
            return "any"
        presented = None
        for key, value in metadata:
            if key == "authorization" and value.startswith("Bearer "):
                presented = value[len("Bearer "):]
        if presented is None:
            return None
        if self._verifiers is None:
            return "any" if hmac.compare_digest(presented, self._shared) else None
        digest = verifier(presented)
        found = None
        for role in ROLES:  # every role compared: the time does not say which matched
            if hmac.compare_digest(digest, self._verifiers[role]):
                found = role
        return found
