"""``four keygen KEY``: an Ed25519 key pair for ``four run --sign`` and ``four audit
--public-key``."""

from __future__ import annotations

import argparse

from four.cli._errors import UsageError


def main(args: argparse.Namespace) -> int:
    """Write KEY (private, mode 0600) and KEY.pub; never over an existing file."""
    from four.trajectory._sign import SigningError, SigningKey, write_key_pair

    try:
        private, public = write_key_pair(str(args.key))
        signer = SigningKey.load(private).public
    except SigningError as exc:
        raise UsageError(str(exc)) from None
    print(
        f"private key: {private} (keep it secret; four run --sign {private})\n"
        f"public key:  {public} (for auditors; four audit --public-key {public})\n"
        f"signer:      {signer}"
    )
    return 0
