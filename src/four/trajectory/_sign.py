"""Ed25519 keys for signed seals: the ``cryptography`` package (``four-loop[sign]``),
imported only when a key is made, loaded or checked."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from four._files import Unreadable, read_regular

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

_EXTRA = "signing needs the cryptography package: pip install 'four-loop[sign]'"
_HEX_KEY = re.compile(r"[0-9a-f]{64}")
KEY_BYTES = 64 * 1024
"""The largest key file read (a PEM key is a few hundred bytes)."""
SIGNED = b"four.seal/1 signature\n"
"""What a signature signs: this prefix and the 32 bytes of a seal's digest."""


class SigningError(ValueError):
    """A key that cannot be made, read or used (or no ``cryptography`` to use it)."""


def _ed25519() -> Any:
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        raise SigningError(_EXTRA) from None
    return ed25519


class SigningKey:
    """An Ed25519 private key that signs seals; ``public`` is its public key in hex.

    >>> key = SigningKey.generate()
    >>> len(key.public), verify_signature(key.public, bytes(32), key.sign(bytes(32)))
    (64, True)
    """

    __slots__ = ("_key", "public")

    def __init__(self, key: Ed25519PrivateKey) -> None:
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        if not callable(getattr(key, "public_key", None)) or not callable(
            getattr(key, "sign", None)
        ):  # (the annotation is a type checker's only: cryptography loads when used)
            shown = repr(key) if len(repr(key)) <= 60 else repr(key)[:57] + "..."
            raise TypeError(
                f"SigningKey: key={shown}: give an Ed25519PrivateKey (not {type(key).__name__}); "
                "SigningKey.load(path) reads one from a file"
            )

        self._key = key
        self.public: str = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()

    @classmethod
    def generate(cls) -> SigningKey:
        """A new random key."""
        return cls(_ed25519().Ed25519PrivateKey.generate())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SigningKey:
        """Read a private key written by ``four keygen`` (PEM, PKCS#8, unencrypted)."""
        ed25519 = _ed25519()
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        try:
            data = read_regular(path, max_bytes=KEY_BYTES)
        except Unreadable as exc:
            raise SigningError(f"cannot read the signing key: {exc}") from None
        try:
            key = load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise SigningError(f"{path} is not an unencrypted PEM private key: {exc}") from None
        if not isinstance(key, ed25519.Ed25519PrivateKey):
            raise SigningError(f"{path} is not an Ed25519 key (four keygen makes one)")
        return cls(key)

    def sign(self, digest: bytes) -> str:
        """The signature of a seal's digest, in hex."""
        return bytes(self._key.sign(SIGNED + digest)).hex()

    def __repr__(self) -> str:  # never the private key
        return f"SigningKey(public={self.public!r})"


def write_key_pair(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Make a key pair: the private key at ``path`` (mode 0600, never over an existing
    file) and the public key at ``path.pub``; both PEM. Returns the two paths."""
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
        PublicFormat,
    )

    key = _ed25519().Ed25519PrivateKey.generate()
    private = Path(path)
    public = private.with_name(private.name + ".pub")
    secret = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    shown = key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    for target, data, mode in ((private, secret, 0o600), (public, shown, 0o644)):
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
        except FileExistsError:
            raise SigningError(f"{target} exists: keygen never replaces a key") from None
        except OSError as exc:
            raise SigningError(f"cannot write {target}: {exc.strerror}") from None
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    return private, public


def wanted_key(source: str | os.PathLike[str] | None) -> str | None:
    """An audit's ``public_key`` argument loaded (None: none asked); its error says so.

    >>> wanted_key(None), wanted_key("AB" * 32) == "ab" * 32
    (None, True)
    """
    if source is None:
        return None
    try:
        return load_public_key(source)
    except SigningError as exc:
        raise SigningError(f"public_key: {exc}") from None


def load_public_key(source: str | os.PathLike[str]) -> str:
    """A public key, in hex: from a PEM file (``four keygen``'s ``.pub``), or a file or
    string holding the 64 hex digits that ``four audit`` prints as the signer."""
    text = str(source).strip().lower()
    if _HEX_KEY.fullmatch(text):
        return text
    try:
        data = read_regular(source, max_bytes=KEY_BYTES)
    except Unreadable as exc:
        raise SigningError(f"cannot read the public key: {exc}") from None
    if _HEX_KEY.fullmatch(inline := data.decode("ascii", "replace").strip().lower()):
        return inline
    ed25519 = _ed25519()
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        PublicFormat,
        load_pem_public_key,
    )

    try:
        key = load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise SigningError(f"{source} is not a PEM public key: {exc}") from None
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise SigningError(f"{source} is not an Ed25519 public key")
    return bytes(key.public_bytes(Encoding.Raw, PublicFormat.Raw)).hex()


def verify_signature(public: str, digest: bytes, signature: str) -> bool:
    """Whether ``signature`` (hex) signs ``digest`` under the public key ``public`` (hex)."""
    ed25519 = _ed25519()
    from cryptography.exceptions import InvalidSignature

    try:
        key = ed25519.Ed25519PublicKey.from_public_bytes(bytes.fromhex(public))
        key.verify(bytes.fromhex(signature), SIGNED + digest)
    except (InvalidSignature, ValueError):
        return False
    return True


def have_cryptography() -> bool:
    """Whether signatures can be made and checked here."""
    try:
        _ed25519()
    except SigningError:
        return False
    return True
