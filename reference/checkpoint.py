"""Load a Qwen3.5 checkpoint: a folder of safetensors (one file or sharded with an
index) or a hub id, text weights under `model.language_model.` (real Qwen3.5
checkpoints) or `model.` (text-only saves). Vision and MTP weights are ignored and the
lm_head is the embedding where the config ties them. Nothing is taken on trust: the config,
the index and every safetensors header are checked before any tensor is read (a header's
offsets must tile the bytes that follow it), every text tensor must have the name, shape
and a floating-point dtype the config asks for, and every weight must be finite. Each
problem is one CheckpointError, one line naming the file (and the tensor) and what was
expected."""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass

import torch

from .config import ConfigError, ModelConfig, is_count, parse_json_object, read_json_object
from .weights import shape_problems, without_tied_head

IGNORED_PREFIXES = ("model.visual.", "mtp.", "visual.")
INDEX_FILE = "model.safetensors.index.json"
MAX_HEADER_BYTES = 100_000_000  # safetensors' own limit on the JSON header
# bits per element of every safetensors dtype
DTYPE_BITS = {"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F8_E4M3FNUZ": 8,
              "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32,
              "I64": 64, "U64": 64, "F64": 64, "C64": 64, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6}
WEIGHT_DTYPES = ("BF16", "F16", "F32", "F64")  # the dtypes a weight may have: they convert exactly enough


class CheckpointError(ValueError):
    """A checkpoint that is missing, unreadable, inconsistent or holds another model."""


@dataclass(frozen=True)
class TensorEntry:
    """One tensor as a safetensors header declares it; begin and end count from the
    first byte after the header."""

    file: str
    key: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int

    @property
    def where(self) -> str:
        """The tensor's name and the file it is in, for messages."""
        return f"{self.key} in {os.path.basename(self.file)}"


def resolve_checkpoint_dir(path_or_repo_id) -> str:
    """A local folder as it is; anything else that looks like `owner/name` is fetched
    from the hub (config, safetensors, tokenizer files)."""
    path = os.fspath(path_or_repo_id)
    if os.path.isdir(path):
        return path
    if os.path.isfile(path):
        raise CheckpointError(f"checkpoint {path!r} is a file; expected the folder that holds config.json and "
                              "the .safetensors")
    looks_like_repo = path.count("/") == 1 and not path.startswith((".", "/", "~")) and not os.path.exists(path)
    if not looks_like_repo:
        raise CheckpointError(f"checkpoint folder {path!r} does not exist (expected a folder of safetensors or a hub id)")
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(path, allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model", "*.jinja"])
    except Exception as e:  # offline, unknown repo, no permission
        raise CheckpointError(f"{path!r} is not a local folder and could not be downloaded from the hub: {e}") from e


def _safetensors_files(folder: str) -> list[str]:
    """The shards the index names, or else every .safetensors file in the folder."""
    index = os.path.join(folder, INDEX_FILE)
    if os.path.isfile(index):
        return _indexed_shards(folder, index)
    files = sorted(f for f in os.listdir(folder) if f.endswith(".safetensors"))
    if not files:
        raise CheckpointError(f"{folder} holds no .safetensors files (expected model.safetensors, or shards "
                              f"and {INDEX_FILE})")
    return [os.path.join(folder, f) for f in files]


def _indexed_shards(folder: str, index: str) -> list[str]:
    """The shard files an index's weight_map names, each of which must be in the folder."""
    weight_map = read_json_object(index, CheckpointError).get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map or not all(isinstance(v, str) for v in weight_map.values()):
        found = "none" if weight_map is None else json.dumps(weight_map)[:80]
        raise CheckpointError(f"{index}: expected a \"weight_map\" object mapping each tensor name to its shard "
                              f"file, found {found}")
    tensors_of = {}
    for name, shard in weight_map.items():
        tensors_of.setdefault(shard, []).append(name)
    for shard, names in sorted(tensors_of.items()):
        if not os.path.isfile(os.path.join(folder, shard)):
            more = f" and {len(names) - 1} more" if len(names) > 1 else ""
            raise CheckpointError(f"{index} puts tensor {names[0]}{more} in shard {shard!r}, which is not in {folder}")
    return [os.path.join(folder, shard) for shard in sorted(tensors_of)]


def read_safetensors_header(file: str) -> list[TensorEntry]:
    """The tensors a safetensors file declares, once the file is seen to hold what the
    format says: an 8-byte little-endian header length, that many bytes of JSON, and then
    the data, which the tensors' offsets tile exactly."""
    size = os.path.getsize(file)
    if size == 0:
        raise CheckpointError(f"{file} is empty (0 bytes); expected a safetensors file")
    if size < 8:
        raise CheckpointError(f"{file} is truncated: {size} bytes, fewer than the 8 of the header length")
    with open(file, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        if length > MAX_HEADER_BYTES:
            raise CheckpointError(f"{file}: its header length says {length:,} bytes, over safetensors' limit of "
                                  f"{MAX_HEADER_BYTES:,}; expected a safetensors file (this one is not, or is corrupt)")
        if 8 + length > size:
            raise CheckpointError(f"{file} is truncated: its header length says {length:,} bytes of JSON, but only "
                                  f"{size - 8:,} bytes follow it")
        header = parse_json_object(f.read(length), f"{file}: its header", CheckpointError)
    entries = [_entry(file, key, value) for key, value in header.items() if key != "__metadata__"]
    _check_offsets(file, entries, size - 8 - length)
    return entries


def _entry(file: str, key: str, value) -> TensorEntry:
    """A header's description of one tensor, checked for form: a safetensors dtype, a shape
    of non-negative ints, and two ordered offsets."""
    try:
        dtype, shape, (begin, end) = value["dtype"], value["shape"], value["data_offsets"]
        ok = dtype in DTYPE_BITS and all(map(is_count, shape)) and is_count(begin) and is_count(end) and begin <= end
    except (TypeError, KeyError, ValueError):  # not an object, a key missing, offsets not a pair
        ok = False
    if not ok:
        raise CheckpointError(f"{file}: its header entry for tensor {key} is {json.dumps(value)[:120]}; expected "
                              '{"dtype": a safetensors dtype such as "BF16", "shape": [sizes], "data_offsets": '
                              "[begin, end]}")
    return TensorEntry(file, key, dtype, tuple(shape), begin, end)


def _check_offsets(file: str, entries: list[TensorEntry], data_len: int) -> None:
    """Each tensor's bytes lie inside the data and match its dtype and shape, and the
    tensors tile the data after the header exactly: no gap, no overlap, nothing after."""
    position = 0
    for e in sorted(entries, key=lambda e: (e.begin, e.end)):
        offsets = f"tensor {e.key}'s data_offsets [{e.begin}, {e.end}]"
        if e.end > data_len:
            raise CheckpointError(f"{file} is shorter than its header says: {offsets} run past the end of its "
                                  f"{data_len:,} bytes of data (the file is truncated, or the header is wrong)")
        bits = math.prod(e.shape) * DTYPE_BITS[e.dtype]
        if bits != 8 * (e.end - e.begin):
            raise CheckpointError(f"{file}: {offsets} hold {e.end - e.begin:,} bytes, but {e.dtype} of shape "
                                  f"{list(e.shape)} takes {bits / 8:,g}")
        if e.begin != position:
            raise CheckpointError(f"{file}: {offsets} start at byte {e.begin:,} of the data; expected {position:,}, "
                                  "where the tensor before it ends")
        position = e.end
    if position != data_len:
        raise CheckpointError(f"{file}: {data_len - position:,} bytes follow the last tensor's data; expected the "
                              "header to describe the whole file")


def _text_name(name: str) -> str | None:
    """The `Qwen3_5ForCausalLM` name of a checkpoint tensor, or None if it is not text."""
    if name.startswith(IGNORED_PREFIXES):
        return None
    if name.startswith("model.language_model."):
        return "model." + name[len("model.language_model."):]
    return name


def _text_entries(folder: str) -> dict[str, TensorEntry]:
    """Every text tensor of the checkpoint, keyed by its transformers name, from the
    checked headers of all its files."""
    entries = {}
    for file in _safetensors_files(folder):
        for entry in read_safetensors_header(file):
            name = _text_name(entry.key)
            if name is None:
                continue
            if name in entries:
                raise CheckpointError(f"{folder}: {name} is stored twice, as {entries[name].where} and as "
                                      f"{entry.where}; expected it once")
            entries[name] = entry
    return entries


def _check_against_config(config: ModelConfig, folder: str, entries: dict[str, TensorEntry]) -> None:
    """One CheckpointError listing every text tensor that is missing, unexpected, of the
    wrong shape for the config or of a dtype that is not a float's."""
    tensors = without_tied_head(config, entries)
    problems = shape_problems(config, {name: e.shape for name, e in tensors.items()}, lambda name: tensors[name].where)
    problems += [f"{e.where} has dtype {e.dtype}, expected one of {', '.join(WEIGHT_DTYPES)}"
                 for e in entries.values() if e.dtype not in WEIGHT_DTYPES]
    if problems:
        raise CheckpointError(f"{folder}: the tensors do not fit its config.json ({config.name}): "
                              + "; ".join(problems))


def _read_tensors(entries: dict[str, TensorEntry], dtype, device, allow_nonfinite: bool) -> dict:
    """The tensors, read file by file, cast to dtype on device; NaN or Inf in one is a
    CheckpointError unless allow_nonfinite."""
    from safetensors import SafetensorError, safe_open

    weights = {}
    for file in sorted({e.file for e in entries.values()}):
        try:
            with safe_open(file, framework="pt") as f:
                for name, e in entries.items():
                    if e.file == file:
                        weights[name] = f.get_tensor(e.key).to(dtype=dtype, device=device)
                        if not allow_nonfinite:
                            _check_finite(e, weights[name])
        except SafetensorError as err:  # what the header checks above did not foresee
            raise CheckpointError(f"{file}: safetensors cannot read it ({err})") from err
    return weights


def _check_finite(entry: TensorEntry, t: torch.Tensor) -> None:
    """Raise if the loaded tensor holds a NaN or an Inf, saying how many of each."""
    finite = torch.isfinite(t)
    if bool(finite.all()):
        return
    nan = int(torch.isnan(t).sum())
    inf = t.numel() - int(finite.sum()) - nan
    raise CheckpointError(f"{entry.file}: tensor {entry.key} holds {nan:,} NaN and {inf:,} Inf among its "
                          f"{t.numel():,} values (as {t.dtype}); expected finite weights (allow_nonfinite=True, "
                          "or --allow-nonfinite-weights, loads them anyway)")


def _untie(weights: dict, entries: dict[str, TensorEntry]) -> None:
    """Drop a stored lm_head.weight of a model that ties it to the embedding: only a copy
    of the embedding is allowed."""
    lm_head = weights.pop("lm_head.weight", None)
    if lm_head is not None and not torch.equal(lm_head, weights["model.embed_tokens.weight"]):
        raise CheckpointError(f"{entries['lm_head.weight'].file}: lm_head.weight differs from the embedding, but this "
                              "model ties them (expected no lm_head.weight, or a copy of model.embed_tokens.weight)")


def load_checkpoint(path_or_repo_id, dtype=torch.bfloat16, device="cpu",
                    allow_nonfinite: bool = False) -> tuple[ModelConfig, dict]:
    """→ (ModelConfig, weights keyed by `Qwen3_5ForCausalLM` names, cast to dtype). Every
    problem is one CheckpointError naming the file (and the tensor); a weight holding NaN
    or Inf is one too, unless allow_nonfinite."""
    folder = resolve_checkpoint_dir(path_or_repo_id)
    try:
        config = ModelConfig.from_hf(os.path.join(folder, "config.json"))
    except ConfigError as e:
        raise CheckpointError(str(e)) from e
    entries = _text_entries(folder)
    _check_against_config(config, folder, entries)
    weights = _read_tensors(entries, dtype, device, allow_nonfinite)
    if config.tie_word_embeddings:
        _untie(weights, entries)
    return config, weights
