"""Evident adapter for the CHAP reference Coordinator (Python chap_coordinator 0.2.10).

    from evident_chap import evident_hooks
    h = evident_hooks(url="http://127.0.0.1:8080", trust="evident.localhost_log.trust.json")
    coord = Coordinator(CoordinatorOptions(enable_chain=True, on_audit=h.on_audit,
        scitt_submitter=h.scitt_submitter, verify_scitt_receipt=h.verify_scitt_receipt))
    h.attach(coord)
    ...
    h.close()
"""
from .adapter import EvidentHooks, Refused
from .client import Unreachable
from .jcs import canonicalize
from .verify import ReceiptError, load_trust, verify_entry_receipt

__all__ = ["evident_hooks", "EvidentHooks", "Refused", "Unreachable", "canonicalize",
           "load_trust", "verify_entry_receipt", "ReceiptError"]
__version__ = "0.1.0"


def evident_hooks(url, token=None, trust=None, spool_dir=None, seal_wait=30.0, logger=None,
                  coordinator=None) -> EvidentHooks:
    """The three CHAP hooks, wired to the evidentd at url. See README.md."""
    return EvidentHooks(url, token=token, trust=trust, spool_dir=spool_dir, seal_wait=seal_wait,
                        logger=logger, coordinator=coordinator)
