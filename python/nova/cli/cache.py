"""``nova cache dir`` / ``nova cache clear``: the disk cache of the
``torch.compile`` backend (:mod:`nova.dynamo.disk_cache`)."""

from __future__ import annotations

import argparse


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Registers ``nova cache``."""
    p = commands.add_parser(
        "cache", help="show or clear the disk cache of torch.compile(backend='nova')",
        description="Compiled programs of the torch.compile backend are cached in "
        "$NOVA_CACHE_DIR, else $XDG_CACHE_HOME/nova, else ~/.cache/nova.")
    p.add_argument("action", choices=("dir", "clear"),
                   help="dir: print the cache folder and its size; clear: empty it")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # Imported here: registering the command must not import torch for every command.
    from nova.dynamo.disk_cache import cache_root, clear_disk_cache

    root = cache_root()
    if args.action == "clear":
        count = clear_disk_cache()
        print(f"nova: removed {count} cached file{'s' if count != 1 else ''} from {root}")
        return 0
    files = [p for p in root.rglob("*") if p.is_file()] if root.is_dir() else []
    size = sum(p.stat().st_size for p in files)
    print(f"{root}  ({len(files)} file{'s' if len(files) != 1 else ''}, {size / 1e6:.1f} MB)")
    return 0
