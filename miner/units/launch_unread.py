"""Why a recorded launch's grid or block cannot be read (issue 14: a launch gives the unit's wrapper the original's
grid and block as numbers or a formula, or says why not).

Two cases are told apart: the launch sets no value the parse sees (a `cudaLaunchConfig_t` whose fields are
filled elsewhere; a kernel an object keeps and launches later, launches.stored), and a value read from an object at
run time (`p.grid_size()` of an execution policy that an
occupancy query sizes, `cfg.dims.grid` of a configuration object built out of sight). Both stay as written in
`config`; `config_unread` names the part and the reason.
"""

from __future__ import annotations

from typing import Any

from miner import lazy_re

# A member read or a method call on an object: `p.grid_size()`, `(cfg).dims.grid`, `policy->block`.
_OBJECT_READ = lazy_re.compile(r"(?:[A-Za-z_]\w*|\))\s*(?:\.|->)\s*[A-Za-z_]")
# A number's own member is no object read: `1.5f`, and `dim3(...).x` is not written in launches.
_NUMBER = lazy_re.compile(r"\d+\.\d*")


def config_unread(config: dict[str, Any], values: dict[str, Any], formula: dict[str, Any]) -> dict[str, str]:
    """Part ("grid", "block") -> reason, for the parts whose value is neither evaluated nor written out of reads
    of the launch's own names and constants."""
    out: dict[str, str] = {}
    for key in ("grid", "block"):
        if isinstance(values.get(key), int):
            continue
        text = formula.get(key) or config.get(key)
        if not text and config.get("config"):
            out[key] = (f"config_object: the configuration object {config['config']} is built where its grid and "
                        "block are not read (a run-time query, a reassignment, a setter of no telling name)")
        elif not text and config.get("stored"):
            # (launches.stored: the call that stores the kernel in an object is the launch; the object's own
            # launching method sizes it from what other calls set on the object)
            out[key] = (f"stored_pointer: the kernel is kept in the {config['stored']}; its {key} is worked out "
                        "there, from the object or that function's own values, not at the call that stores the kernel")
        elif not text:
            out[key] = "not_set: the launch sets no value the parse sees"
        elif _OBJECT_READ.search(_NUMBER.sub("0", str(text))):
            out[key] = f"object_read: read from an object at run time ({' '.join(str(text).split())})"
    return out
