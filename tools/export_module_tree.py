#!/usr/bin/env python3
"""Export a PyTorch model's module tree as shardscope-tree/1 JSON (docs/scenario.md, "Module tree files").

Needs only torch and transformers. The model is built on the meta device, so no weights are
allocated or downloaded: any size exports in seconds.

  # from a Hugging Face config.json (model_type read from the file, or given)
  tools/export_module_tree.py --config path/config.json --out tree.json
  # from a Python expression building an nn.Module (names from --import are in scope)
  tools/export_module_tree.py --module "MyNet(depth=4)" --import mypkg.models --out tree.json
  # only the parameter count, as transformers reports it (tied tensors once)
  tools/export_module_tree.py --config path/config.json --count

What the tree holds: every module under its registered name (a module registered twice is
written once, then as a reference carrying its `id`), every parameter with shape, dtype,
requires_grad and a tie `id` (the canonical FQN) when one tensor has several names, the
`gradient_checkpointing` attribute (HF base models and decoder layers carry it),
checkpoint wrappers, and compute descriptors inferred from module classes and the config.
"""

import argparse
import importlib
import json
import sys

TREE_FORMAT = "shardscope-tree/1"

ACTIVATIONS = {
    "SiLUActivation": "silu", "SiLU": "silu", "GELUActivation": "gelu", "GELU": "gelu",
    "GELUTanh": "gelu_tanh", "NewGELUActivation": "gelu_tanh", "ReLU": "relu",
}
COLUMN = {"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "q_b_proj", "kv_b_proj",
          "Wqkv", "lm_head"}
ROW = {"o_proj", "down_proj", "out_proj"}
# Linears whose input another op already saves (descriptor.h, shared_input).
SHARED_INPUT = {"k_proj", "v_proj", "up_proj", "o_proj", "out_proj", "kv_a_proj_with_mqa"}


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def cfg(config, *names, default=None):
    for n in names:
        v = getattr(config, n, None)
        if v is not None:
            return v
    return default


def window_of(config, layer_index):
    """Sliding window of decoder layer `layer_index` (0 = full attention)."""
    types = getattr(config, "layer_types", None)
    sliding = getattr(config, "sliding_window", None) or 0
    if types is not None and layer_index is not None and layer_index < len(types):
        return sliding if types[layer_index] == "sliding_attention" else 0
    if getattr(config, "model_type", "") in ("mistral", "mixtral"):
        return sliding
    return 0


def infer_op(module, name, parent, config, layer_index, is_root):
    """A descriptor for the module, mirroring the C++ builders (core/model/hf_build_*.cpp)."""
    import torch.nn as nn
    cls = type(module).__name__
    if is_root:
        vocab = cfg(config, "vocab_size") if config is not None else None
        return {"kind": "loss", "vocab": vocab} if vocab else None
    if isinstance(module, nn.Linear):
        op = {"kind": "linear", "in": module.in_features, "out": module.out_features}
        if module.bias is not None:
            op["bias"] = 1
        if name in COLUMN:
            op["variant"] = "column"
        elif name in ROW:
            op["variant"] = "row"
        shared = name in SHARED_INPUT or (name == "gate_proj" and parent_name_is(parent, "shared_experts"))
        if name == "up_proj" and not hasattr(parent, "gate_proj"):
            shared = False  # MPT: up_proj is the MLP's first reader
        if shared:
            op["shared_input"] = 1
        return op
    if isinstance(module, nn.Embedding):
        op = {"kind": "embedding", "vocab": module.num_embeddings, "dim": module.embedding_dim}
        if name != "wpe":
            op["variant"] = "vocab"
        return op
    if cls.endswith("RMSNorm") and getattr(module, "weight", None) is not None:
        op = {"kind": "norm", "variant": "rmsnorm", "dim": int(module.weight.shape[0])}
        # Qwen3 / Gemma 3 q_norm, k_norm: one norm over each head's vector (descriptor.h
        # `heads`), as the C++ builders write it (hf_build_util.cpp HeadNorm).
        heads = None
        if config is not None and type(parent).__name__.endswith("Attention"):
            if name == "q_norm":
                heads = cfg(config, "num_attention_heads", "n_heads")
            elif name == "k_norm":
                heads = cfg(config, "num_key_value_heads", "num_attention_heads")
        if heads:
            op["heads"] = int(heads)
        return op
    if isinstance(module, nn.LayerNorm):
        return {"kind": "norm", "variant": "layernorm", "dim": int(module.normalized_shape[0])}
    if cls in ACTIVATIONS and parent is not None and hasattr(parent, "down_proj") and \
            isinstance(getattr(parent, "down_proj"), nn.Linear):
        up = getattr(parent, "up_proj")
        return {"kind": "activation", "variant": ACTIVATIONS[cls], "dim": up.out_features,
                "gated": 1 if hasattr(parent, "gate_proj") else 0}
    if config is None:
        return None
    if cls.endswith("Attention"):
        heads = cfg(config, "num_attention_heads", "n_heads")
        op = {"kind": "attention", "heads": heads, "causal": 1}
        if hasattr(module, "kv_b_proj"):  # multi-head latent attention
            op["kv_heads"] = heads
            op["head_dim"] = config.qk_nope_head_dim + config.qk_rope_head_dim
            if config.v_head_dim != op["head_dim"]:
                op["v_head_dim"] = config.v_head_dim
        else:
            hidden = cfg(config, "hidden_size", "d_model")
            op["kv_heads"] = cfg(config, "num_key_value_heads", default=heads)
            op["head_dim"] = getattr(module, "head_dim", None) or hidden // heads
        w = window_of(config, layer_index)
        if w:
            op["window"] = w
        if "sinks" in module._parameters:
            op["sinks"] = 1
        return op
    if cls.endswith("TopKRouter") or cls.endswith("TopkRouter"):
        return {"kind": "router", "dim": int(module.weight.shape[1]),
                "experts": int(module.weight.shape[0]),
                "top_k": cfg(config, "num_experts_per_tok")}
    if cls.endswith("Experts") and "gate_up_proj" in module._parameters:
        shape = module.gate_up_proj.shape
        experts = int(shape[0])
        transposed = "gate_up_proj_bias" in module._parameters  # gpt-oss: [E, in, out]
        dim, two_ffn = (int(shape[1]), int(shape[2])) if transposed else (int(shape[2]), int(shape[1]))
        return {"kind": "experts", "experts": experts, "top_k": cfg(config, "num_experts_per_tok"),
                "dim": dim, "ffn": two_ffn // 2, "gated": 1}
    return None


def parent_name_is(parent, name):
    return getattr(parent, "_shardscope_name", None) == name


def export_tree(model, config=None):
    """The tree JSON of `model` (an nn.Module)."""
    import torch.nn as nn
    # First pass: how often each module and parameter object is reached (shared / tied).
    module_visits, param_visits, param_first = {}, {}, {}

    def count(m, fqn):
        module_visits[id(m)] = module_visits.get(id(m), 0) + 1
        if module_visits[id(m)] > 1:
            return
        for pname, p in m._parameters.items():
            if p is None:
                continue
            pfqn = f"{fqn}.{pname}" if fqn else pname
            param_visits[id(p)] = param_visits.get(id(p), 0) + 1
            param_first.setdefault(id(p), pfqn)
        for cname, c in m._modules.items():
            if c is not None:
                count(c, f"{fqn}.{cname}" if fqn else cname)

    count(model, "")
    written = {}

    def layer_index_of(fqn):
        parts = fqn.split(".")
        for i, part in enumerate(parts[:-1]):
            if part in ("layers", "blocks", "h") and parts[i + 1].isdigit():
                return int(parts[i + 1])
        return None

    def visit(m, name, fqn, parent):
        cls = type(m).__name__
        node = {"name": name, "class": cls}
        if module_visits[id(m)] > 1:
            if id(m) in written:
                node["id"] = written[id(m)]
                return node
            written[id(m)] = fqn or "<root>"
            node["id"] = written[id(m)]
        object.__setattr__(m, "_shardscope_name", name)
        if hasattr(m, "gradient_checkpointing"):
            node["gradient_checkpointing"] = True
        if cls == "CheckpointWrapper":
            node["checkpoint_wrapper"] = True
        op = infer_op(m, name, parent, config, layer_index_of(fqn), parent is None)
        if op is not None:
            node["op"] = op
        params = []
        for pname, p in m._parameters.items():
            if p is None:
                continue
            entry = {"name": pname, "shape": list(p.shape), "dtype": dtype_name(p.dtype)}
            if not p.requires_grad:
                entry["requires_grad"] = False
            if param_visits[id(p)] > 1:
                entry["id"] = param_first[id(p)]
            params.append(entry)
        if params:
            node["params"] = params
        children = [visit(c, cname, f"{fqn}.{cname}" if fqn else cname, m)
                    for cname, c in m._modules.items() if c is not None]
        if children:
            node["children"] = children
        return node

    root = visit(model, "", "", None)
    out_config = {}
    if config is not None:
        out_config = json.loads(config.to_json_string(use_diff=False))
        out_config["model_type"] = config.model_type
        out_config["architectures"] = [type(model).__name__]
    return {"format": TREE_FORMAT, "config": out_config, "root": root}


def build_from_config(path, model_type=None):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    with open(path) as f:
        raw = json.load(f)
    model_type = model_type or raw.pop("model_type", None)
    raw.pop("model_type", None)
    raw.pop("architectures", None)
    if model_type is None:
        sys.exit(f"{path}: no model_type (pass --model-type)")
    config = AutoConfig.for_model(model_type, **raw)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return model, config


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", help="a Hugging Face config.json")
    src.add_argument("--module", help="a Python expression that builds an nn.Module")
    ap.add_argument("--model-type", help="overrides the config's model_type")
    ap.add_argument("--import", dest="imports", action="append", default=[],
                    help="a module whose names --module may use (repeatable)")
    ap.add_argument("--out", help="output file (default: stdout)")
    ap.add_argument("--count", action="store_true",
                    help="print {\"total_params\": N} (tied tensors once) instead of the tree")
    args = ap.parse_args(argv)

    import torch
    config = None
    if args.config:
        model, config = build_from_config(args.config, args.model_type)
    else:
        scope = {"torch": torch, "nn": torch.nn}
        for name in args.imports:
            mod = importlib.import_module(name)
            scope.update({k: v for k, v in vars(mod).items() if not k.startswith("_")})
        with torch.device("meta"):
            model = eval(args.module, scope)  # noqa: S307 - the user's own expression
        config = getattr(model, "config", None)
    if args.count:
        text = json.dumps({"total_params": sum(p.numel() for p in model.parameters())})
    else:
        text = json.dumps(export_tree(model, config), indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
