"""``torch.compile(model, backend="nova")``: Dynamo's graphs on the simulated accelerator.

    import torch
    compiled = torch.compile(model, backend="nova", options={"target": "nova-t1"})
    y = compiled(x)            # each graph runs on the simulator; graph breaks are fine
    print(nova.dynamo.report())  # per graph: calls, simulated time, ops in eager, cache hits

The backend is found through the ``torch_dynamo_backends`` entry point, so
nova need not be imported first. See docs/torch-compile.md.
"""

from nova.dynamo.backend import backend
from nova.dynamo.cache import CacheInfo, cache_info, clear_cache
from nova.dynamo.disk_cache import cache_root, clear_disk_cache
from nova.dynamo.errors import NovaFallbackWarning
from nova.dynamo.options import BackendOptions
from nova.dynamo.stats import GraphStats, Report, report
from nova.dynamo import logs as _logs

_logs.register()

__all__ = ["BackendOptions", "CacheInfo", "GraphStats", "NovaFallbackWarning", "Report",
           "backend", "cache_info", "cache_root", "clear_cache", "clear_disk_cache", "report"]
