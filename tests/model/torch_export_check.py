#!/usr/bin/env python3
"""Checks the committed model-tree fixtures and pinned parameter counts against the installed
torch + transformers (CTest label `torch`; exits 77, CTest's skip code, when they are missing).

  python3 tests/model/torch_export_check.py               # compare (run from the repo root)
  python3 tests/model/torch_export_check.py --regenerate  # rewrite fixtures and pinned counts

Fixtures: tests/fixtures/trees/NAME.config.json → NAME.tree.json (exported on the meta device).
Pinned counts: tests/model/pinned_param_counts.json, one per built-in (core/model/configs/).
"""

import glob
import json
import os
import sys

SKIP = 77


def main():
    regenerate = "--regenerate" in sys.argv[1:]
    try:
        import torch  # noqa: F401
        import transformers
    except Exception as e:  # noqa: BLE001 - any import failure means: cannot check here
        print(f"skipped: torch/transformers not importable ({e})")
        return SKIP
    root = os.environ.get("SHARDSCOPE_SOURCE_DIR", os.getcwd())
    sys.path.insert(0, os.path.join(root, "tools"))
    import export_module_tree as exporter

    failures = 0
    for cfg in sorted(glob.glob(os.path.join(root, "tests/fixtures/trees/*.config.json"))):
        out = cfg.replace(".config.json", ".tree.json")
        model, config = exporter.build_from_config(cfg)
        tree = exporter.export_tree(model, config)
        tree["config"] = {"model_type": config.model_type,
                          "architectures": [type(model).__name__]}
        if regenerate:
            with open(out, "w") as f:
                json.dump(tree, f, indent=1)
                f.write("\n")
            print(f"wrote {os.path.relpath(out, root)}")
            continue
        with open(out) as f:
            committed = json.load(f)
        if committed != tree:
            failures += 1
            print(f"FAIL {os.path.relpath(out, root)}: the export from transformers "
                  f"{transformers.__version__} differs (run with --regenerate and review)")
        else:
            print(f"ok   {os.path.relpath(out, root)}")

    pinned_path = os.path.join(root, "tests/model/pinned_param_counts.json")
    counts = {}
    for cfg in sorted(glob.glob(os.path.join(root, "core/model/configs/*.json"))):
        name = os.path.basename(cfg)[: -len(".json")]
        model, _ = exporter.build_from_config(cfg)
        counts[name] = sum(p.numel() for p in model.parameters())
        del model
    if regenerate:
        with open(pinned_path, "w") as f:
            json.dump({"transformers": transformers.__version__, "torch": torch.__version__,
                       "total_params": counts}, f, indent=2)
            f.write("\n")
        print(f"wrote {os.path.relpath(pinned_path, root)}")
        return 0
    with open(pinned_path) as f:
        pinned = json.load(f)["total_params"]
    for name, n in counts.items():
        if pinned.get(name) != n:
            failures += 1
            print(f"FAIL pinned count of {name}: transformers says {n}, pinned {pinned.get(name)}")
        else:
            print(f"ok   {name}: {n}")
    print(f"{len(counts) + len(glob.glob(os.path.join(root, 'tests/fixtures/trees/*.config.json'))) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
