#!/usr/bin/env python3
"""Writes the small module trees (shardscope-tree/1, docs/scenario.md) the example scenarios use.

Regenerate with:  python3 examples/trees/make_trees.py
The trees are small on purpose: they show planning features (declared vision units, excluded
subtrees, execution order, tied weights) without a large model.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def param(name, shape, pid=None, dtype="float32", layout=None):
    p = {"name": name, "shape": shape, "dtype": dtype}
    if pid:
        p["id"] = pid
    if layout:
        p["layout"] = layout
    return p


def linear(name, out_features, in_features, cls="Linear"):
    return {"name": name, "class": cls, "params": [param("weight", [out_features, in_features])],
            "op": {"kind": "linear", "in": in_features, "out": out_features}}


def norm(name, dim, cls="RMSNorm"):
    return {"name": name, "class": cls, "params": [param("weight", [dim])],
            "op": {"kind": "norm", "variant": "rmsnorm", "dim": dim}}


def decoder_layer(index, hidden, ffn):
    return {"name": str(index), "class": "TinyDecoderLayer", "children": [
        norm("input_layernorm", hidden),
        {"name": "self_attn", "class": "TinyAttention", "children": [
            linear("q_proj", hidden, hidden), linear("k_proj", hidden, hidden),
            linear("v_proj", hidden, hidden), linear("o_proj", hidden, hidden)]},
        norm("post_attention_layernorm", hidden),
        {"name": "mlp", "class": "TinyMLP", "children": [
            linear("gate_proj", ffn, hidden), linear("up_proj", ffn, hidden),
            linear("down_proj", hidden, ffn)]}]}


def vision_block(index, dim):
    return {"name": str(index), "class": "TinyVisionBlock", "children": [
        norm("norm1", dim, "LayerNorm"),
        linear("qkv", 3 * dim, dim), linear("proj", dim, dim),
        norm("norm2", dim, "LayerNorm"),
        linear("fc1", 4 * dim, dim), linear("fc2", dim, 4 * dim)]}


def tiny_vl():
    hidden, ffn, vocab, vdim = 1024, 2816, 32000, 768
    return {
        "format": "shardscope-tree/1",
        "config": {"model_type": "tiny_vl", "architectures": ["TinyVLForConditionalGeneration"]},
        "root": {"name": "", "class": "TinyVLForConditionalGeneration", "children": [
            {"name": "vision", "class": "TinyVisionModel", "gradient_checkpointing": True,
             "children": [
                 {"name": "patch_embed", "class": "TinyPatchEmbed",
                  "children": [{"name": "proj", "class": "Conv2d",
                                "params": [param("weight", [vdim, 3, 14, 14])]}]},
                 {"name": "blocks", "class": "ModuleList",
                  "children": [vision_block(i, vdim) for i in range(4)]},
                 {"name": "merger", "class": "TinyPatchMerger", "children": [
                     norm("ln_q", vdim, "LayerNorm"), linear("fc1", hidden, 4 * vdim),
                     linear("fc2", hidden, hidden)]}]},
            {"name": "model", "class": "TinyModel", "gradient_checkpointing": True, "children": [
                {"name": "embed_tokens", "class": "Embedding",
                 "params": [param("weight", [vocab, hidden], "embed")],
                 "op": {"kind": "embedding", "vocab": vocab, "dim": hidden}},
                {"name": "layers", "class": "ModuleList",
                 "children": [decoder_layer(i, hidden, ffn) for i in range(6)]},
                norm("norm", hidden)]},
            {"name": "lm_head", "class": "Linear", "params": [param("weight", [vocab, hidden], "embed")],
             "op": {"kind": "linear", "in": hidden, "out": vocab}}]}}


def main():
    trees = {"tiny_vl.json": tiny_vl()}
    for name, tree in trees.items():
        with open(os.path.join(HERE, name), "w") as f:
            json.dump(tree, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
