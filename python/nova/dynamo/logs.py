"""Nova's backend logs under torch's logging: ``TORCH_LOGS=nova`` (info: each
compile, disk-cache read, per-op decision) or ``TORCH_LOGS=+nova`` (debug:
each probe too), like ``TORCH_LOGS=dynamo``; also
``torch._logging.set_logs(nova=logging.DEBUG)``.

torch parses ``TORCH_LOGS`` when it is imported, before Nova's loggers exist,
so registering them re-applies the setting when it names Nova.
"""

from __future__ import annotations

import re

#: The logger every module of the backend logs under.
LOGGER = "nova.dynamo"


def register() -> None:
    try:
        from torch._logging import _internal
    except ImportError:  # pragma: no cover - an older torch: plain logging only
        return
    if "nova" in _internal.log_registry.log_alias_to_log_qnames:
        return
    _internal.register_log("nova", LOGGER)
    from nova.knobs import knobs

    if re.search(r"(^|,)\s*[+-]?nova\s*(,|$)", knobs().torch_logs):
        _internal._init_logs()
