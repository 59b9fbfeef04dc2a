"""Checkpoint loading: round-trips what `save_pretrained` writes, in both naming schemes
(text-only `model.` and Qwen3.5's `model.language_model.` with vision and MTP weights),
sharded or not, in bf16, fp16 or fp32; every broken checkpoint (a checkpoint that lies) is
one CheckpointError naming the file and the tensor, and one `error:` line from every
compare command that takes --checkpoint."""

import json
import os
import re
import shutil
import struct

import pytest
import torch
from safetensors.torch import save_file

from compare.__main__ import main
from reference import CheckpointError, ModelConfig, load_checkpoint, random_weights

CONFIG = ModelConfig.tiny()
WEIGHTS = random_weights(CONFIG, seed=0)


@pytest.fixture(scope="module")
def saved_text_model(tmp_path_factory, tiny_config, tiny_weights):
    """What Qwen3_5ForCausalLM.save_pretrained writes for the tiny model (sharded)."""
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

    folder = tmp_path_factory.mktemp("text_ckpt")
    model = Qwen3_5ForCausalLM(Qwen3_5TextConfig(**tiny_config.to_hf_dict())).to(torch.bfloat16)
    state = dict(tiny_weights)
    state["lm_head.weight"] = state["model.embed_tokens.weight"]
    model.load_state_dict(state)
    model.save_pretrained(folder, max_shard_size="100KB")
    return folder


def test_round_trip_save_pretrained(saved_text_model, tiny_config, tiny_weights):
    assert any(f.endswith(".index.json") for f in os.listdir(saved_text_model)), "expected a sharded save"
    config, weights = load_checkpoint(saved_text_model)
    assert config.layer_types == tiny_config.layer_types and config.hidden_size == tiny_config.hidden_size
    assert set(weights) == set(tiny_weights)
    for name, t in tiny_weights.items():
        assert torch.equal(weights[name], t), name


def write_multimodal(folder, config, weights, extra=None, drop=None):
    """A checkpoint laid out like the real Qwen/Qwen3.5-0.8B: a VLM config nesting
    text_config, text weights under model.language_model., vision and mtp weights."""
    os.makedirs(folder, exist_ok=True)
    tensors = {"model.language_model." + k[len("model."):]: v.contiguous() for k, v in weights.items() if k != drop}
    tensors["model.visual.patch_embed.proj.weight"] = torch.zeros(4, 3)
    tensors["mtp.fc.weight"] = torch.zeros(2, 2)
    tensors.update(extra or {})
    save_file(tensors, os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"],
                   "text_config": config.to_hf_dict(), "vision_config": {"depth": 1}}, f)


def test_multimodal_naming(tmp_path, tiny_config, tiny_weights):
    write_multimodal(tmp_path, tiny_config, tiny_weights)
    config, weights = load_checkpoint(tmp_path, dtype=torch.float32)
    assert set(weights) == set(tiny_weights)
    assert weights["model.norm.weight"].dtype == torch.float32
    assert torch.equal(weights["model.layers.0.linear_attn.A_log"], tiny_weights["model.layers.0.linear_attn.A_log"].float())
    assert config.linear_num_value_heads == tiny_config.linear_num_value_heads


def test_missing_folder():
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint("/no/such/folder/anywhere")


def test_folder_without_safetensors(tmp_path, tiny_config):
    (tmp_path / "config.json").write_text(json.dumps(tiny_config.to_hf_dict()))
    with pytest.raises(CheckpointError, match="no .safetensors"):
        load_checkpoint(tmp_path)


def test_other_model(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 64}))
    save_file({"model.embed_tokens.weight": torch.zeros(4, 4)}, str(tmp_path / "model.safetensors"))
    with pytest.raises(CheckpointError, match="not a Qwen3.5 text config"):
        load_checkpoint(tmp_path)


def test_every_problem_listed(tmp_path, tiny_config, tiny_weights):
    bad_shape = {"model.language_model.norm.weight": torch.zeros(3)}
    write_multimodal(tmp_path, tiny_config, tiny_weights, drop="model.layers.1.mlp.up_proj.weight",
                     extra={**bad_shape, "model.language_model.layers.0.surprise.weight": torch.zeros(1)})
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(tmp_path)
    msg = str(info.value)
    assert "model.layers.1.mlp.up_proj.weight" in msg and "missing" in msg
    assert "model.layers.0.surprise.weight" in msg and "unexpected" in msg
    assert "model.language_model.norm.weight in model.safetensors has shape (3,), expected (64,)" in msg


def test_untied_lm_head_rejected(tmp_path, tiny_config, tiny_weights):
    write_multimodal(tmp_path, tiny_config, tiny_weights, extra={"lm_head.weight": torch.ones(512, 64)})
    with pytest.raises(CheckpointError, match="ties them"):
        load_checkpoint(tmp_path)


def test_config_from_hf_reads_real_config():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "qwen3_5_0_8b_config.json")
    if not os.path.exists(path):
        pytest.skip("shared/qwen3_5_0_8b_config.json is not beside this checkout")
    assert ModelConfig.from_hf(path).replace(name="x") == ModelConfig.qwen3_5_0_8b().replace(name="x")


def test_config_from_hf_larger_family_member(tiny_config):
    """Larger Qwen3.5 sizes have more DeltaNet value heads than key heads."""
    d = tiny_config.to_hf_dict() | {"linear_num_value_heads": 8, "linear_num_key_heads": 2, "hidden_size": 96}
    config = ModelConfig.from_hf({"text_config": d})
    assert config.value_dim == 8 * 16 and config.conv_dim == 2 * 2 * 16 + 8 * 16
    assert set(random_weights(config)) == set(random_weights(tiny_config))


# ---- checkpoints that lie ------------------------------------------------------------------------
def save_text_checkpoint(folder, config=CONFIG, **changes):
    """config.json and model.safetensors as a text-only save names them: the seeded tiny
    weights, with `changes` (name → tensor, or None to leave the tensor out) applied."""
    tensors = {k: v for k, v in {**WEIGHTS, **changes}.items() if v is not None}
    save_file({k: v.contiguous() for k, v in tensors.items()}, os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config.to_hf_dict(), f)


def split_safetensors(path) -> tuple[dict, bytes]:
    """(header, data) of a safetensors file."""
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + length]), raw[8 + length:]


def write(path, content, mode=None):
    """Write (or with mode="ab", append) text or bytes to path."""
    with open(path, mode or ("wb" if isinstance(content, bytes) else "w")) as f:
        f.write(content)


def edit_header(folder, edit):
    """Rewrite model.safetensors with `edit(header)` applied and the data untouched."""
    path = folder / "model.safetensors"
    header, data = split_safetensors(path)
    edit(header)
    text = json.dumps(header).encode()
    write(path, struct.pack("<Q", len(text)) + text + data)


def last_tensor(header) -> str:
    return max((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"])


def cut(folder, size):
    """Truncate model.safetensors to `size` bytes."""
    path = folder / "model.safetensors"
    write(path, path.read_bytes()[:size])


def index_with_missing_shard(folder):
    weight_map = {k: "model.safetensors" for k in WEIGHTS} | {"model.norm.weight": "model-00002-of-00002.safetensors"}
    write(folder / "model.safetensors.index.json", json.dumps({"metadata": {}, "weight_map": weight_map}))


def writes(name, content):
    """A breaker that writes `content` to the file `name` of the folder."""
    return lambda folder: write(folder / name, content)


def resaves(config=CONFIG, **changes):
    """A breaker that saves the checkpoint again, with another config or changed tensors."""
    return lambda folder: save_text_checkpoint(folder, config, **changes)


def set_first(name, value, count=1):
    """{name: the seeded weight, its first `count` values set to `value`}."""
    t = WEIGHTS[name].clone()
    t.view(-1)[:count] = value
    return {name: t}


ST = r"model\.safetensors"
MISFIT = r"the tensors do not fit its config\.json \(qwen3_5_text\): "
# case: (breaker: breaks a copy of the good folder and returns the path to load if not the folder; expected message)
CASES = {
    "missing folder": (shutil.rmtree, r"^checkpoint folder '.*' does not exist \(expected a folder of safetensors"),
    "a file, not a folder": (lambda d: d / "model.safetensors",
                             r"^checkpoint '.*model\.safetensors' is a file; expected the folder that holds config"),
    "no config": (lambda d: (d / "config.json").unlink(),
                  r"config\.json does not exist \(expected the model's transformers config\.json\)$"),
    "empty config": (writes("config.json", ""), r"config\.json is empty; expected a JSON object$"),
    "malformed config": (writes("config.json", '{"hidden_size": 64,'),
                         r"config\.json is not valid JSON \(Expecting property name .*\); expected a JSON object$"),
    "config is a list": (writes("config.json", "[1, 2]"), r"config\.json is an array in JSON, expected an object$"),
    "another model's config": (writes("config.json", '{"model_type": "llama", "hidden_size": 64}'),
                               r"config\.json: config is not a Qwen3\.5 text config \(model_type='llama'\); missing"),
    "config value of the wrong type": (writes("config.json", json.dumps(CONFIG.to_hf_dict() | {"hidden_size": "64"})),
                                       r"config\.json: expected positive integers, got hidden_size='64'$"),
    "config rope of the wrong type": (writes("config.json", json.dumps(CONFIG.to_hf_dict() | {"rope_parameters": "x"})),
                                      r"config\.json: a value has the wrong type \(AttributeError: 'str' object has "
                                      r"no attribute 'get'\)$"),
    "no safetensors": (lambda d: (d / "model.safetensors").unlink(), r"holds no \.safetensors files"),
    "zero-byte safetensors": (lambda d: cut(d, 0), ST + r" is empty \(0 bytes\); expected a safetensors file$"),
    "safetensors shorter than its length": (lambda d: cut(d, 5),
                                            ST + r" is truncated: 5 bytes, fewer than the 8 of the header length$"),
    "safetensors cut in its header": (lambda d: cut(d, 100), ST + r" is truncated: its header length says 5,712 bytes "
                                      r"of JSON, but only 92 bytes follow it$"),
    "safetensors cut in its data": (lambda d: cut(d, 200_000), ST + r" is shorter than its header says: tensor "
                                    r"model\.\S+'s data_offsets \[\d+, \d+\] run past the end of its 194,280 bytes"),
    "oversized header length": (writes("model.safetensors", struct.pack("<Q", 10**12) + b"{}"),
                                ST + r": its header length says 1,000,000,000,000 bytes, over safetensors' limit of "
                                r"100,000,000"),
    "header offsets past the file": (
        lambda d: edit_header(d, lambda h: h[last_tensor(h)]["data_offsets"].__setitem__(1, 10**6)),
        ST + r" is shorter than its header says: tensor model\.norm\.weight's data_offsets \[433424, 1000000\] run "
        r"past the end of its 433,552 bytes of data"),
    "header not JSON": (writes("model.safetensors", struct.pack("<Q", 6) + b"{nope}"),
                        ST + r": its header is not valid JSON \(.*\); expected a JSON object$"),
    "header entry malformed": (lambda d: edit_header(d, lambda h: h["model.norm.weight"].pop("dtype")),
                               ST + r": its header entry for tensor model\.norm\.weight is .*; expected \{\"dtype\": "
                               r"a safetensors dtype such as \"BF16\", \"shape\": \[sizes\], \"data_offsets\": "),
    "header shape disagrees with the bytes": (
        lambda d: edit_header(d, lambda h: h["model.norm.weight"].__setitem__("shape", [32])),
        ST + r": tensor model\.norm\.weight's data_offsets \[433424, 433552\] hold 128 bytes, but BF16 of shape \[32\] "
        r"takes 64$"),
    "bytes after the data": (lambda d: write(d / "model.safetensors", b"junk", mode="ab"),
                             ST + r": 4 bytes follow the last tensor's data; expected the header to describe the "
                             r"whole file$"),
    "header metadata not strings": (lambda d: edit_header(d, lambda h: h.__setitem__("__metadata__", {"format": 1})),
                                    ST + r": safetensors cannot read it \(.*\)$"),
    "int8 tensor": (resaves(**{"model.norm.weight": torch.ones(64, dtype=torch.int8)}),
                    MISFIT + r"model\.norm\.weight in model\.safetensors has dtype I8, expected one of BF16, F16, F32, "
                    r"F64$"),
    "NaN in a weight": (resaves(**set_first("model.layers.0.mlp.up_proj.weight", float("nan"))),
                        ST + r": tensor model\.layers\.0\.mlp\.up_proj\.weight holds 1 NaN and 0 Inf among its 8,192 "
                        r"values \(as torch\.bfloat16\); expected finite weights \(allow_nonfinite=True, or "
                        r"--allow-nonfinite-weights, loads them anyway\)$"),
    "Inf in a weight": (resaves(**set_first("model.embed_tokens.weight", float("-inf"), count=2)),
                        ST + r": tensor model\.embed_tokens\.weight holds 0 NaN and 2 Inf among its 32,768 values"),
    "config shapes disagree with the tensors": (
        resaves(config=CONFIG.replace(intermediate_size=96)),
        MISFIT + r"model\.layers\.0\.mlp\.gate_proj\.weight in model\.safetensors has shape \(128, 64\), expected "
        r"\(96, 64\); .*; … 4 more of the wrong shape$"),
    "missing tensor": (resaves(**{"model.layers.2.linear_attn.A_log": None}),
                       MISFIT + r"1 missing: model\.layers\.2\.linear_attn\.A_log$"),
    "tensor stored twice": (resaves(**{"model.language_model.norm.weight": torch.zeros(64, dtype=torch.bfloat16)}),
                            r"model\.norm\.weight is stored twice, as model\.language_model\.norm\.weight in "
                            r"model\.safetensors and as model\.norm\.weight in model\.safetensors; expected it once$"),
    "index names a missing shard": (index_with_missing_shard,
                                    r"model\.safetensors\.index\.json puts tensor model\.norm\.weight in shard "
                                    r"'model-00002-of-00002\.safetensors', which is not in "),
    "malformed index": (writes("model.safetensors.index.json", '{"weight_map": '),
                        r"model\.safetensors\.index\.json is not valid JSON \(.*\); expected a JSON object$"),
    "index without a weight_map": (writes("model.safetensors.index.json", '{"metadata": {}}'),
                                   r"model\.safetensors\.index\.json: expected a \"weight_map\" object mapping each "
                                   r"tensor name to its shard file, found none$"),
}


@pytest.fixture(scope="module")
def good_checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("good")
    save_text_checkpoint(folder)
    return folder


def broken(case, good_checkpoint, tmp_path):
    """A copy of the good checkpoint broken as `case` says → (path to load, expected message)."""
    folder = tmp_path / "ckpt"
    shutil.copytree(good_checkpoint, folder)
    breaker, message = CASES[case]
    return breaker(folder) or folder, message


@pytest.mark.parametrize("case", CASES)
def test_a_checkpoint_that_lies_is_one_checkpoint_error(case, good_checkpoint, tmp_path):
    path, message = broken(case, good_checkpoint, tmp_path)
    with pytest.raises(CheckpointError, match=message) as info:
        load_checkpoint(path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("case", CASES)
def test_diff_shows_one_line_for_a_checkpoint_that_lies(case, good_checkpoint, tmp_path, capsys):
    path, message = broken(case, good_checkpoint, tmp_path)
    status = main(["diff", "--config", "tiny", "--checkpoint", str(path), "--tiers", "reference", "--device", "cpu",
                   "--prompt-len", "1", "--decode-steps", "0"])
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err
    assert len(err.splitlines()) == 1 and err.startswith("error: ")
    assert re.search(message, err[len("error: "):].rstrip("\n"))


@pytest.mark.parametrize("argv", [
    ["bench", "--tiers", "reference", "--device", "cpu"],
    ["ab", "base", "--tier", "reference", "--device", "cpu"],
    ["generate", "--prompt-ids", "1,2", "--tier", "reference", "--device", "cpu"],
])
def test_every_command_shows_one_line(argv, good_checkpoint, tmp_path, capsys):
    path, _ = broken("safetensors cut in its data", good_checkpoint, tmp_path)
    if argv[0] == "generate":  # a tokenizer, so that what lies is the weights
        from tokenizers import Tokenizer, models

        Tokenizer(models.WordLevel({"<unk>": 0}, unk_token="<unk>")).save(str(path / "tokenizer.json"))
    status = main([*argv, "--checkpoint", str(path)])
    err = capsys.readouterr().err
    assert status == 2 and len(err.splitlines()) == 1
    assert err.startswith("error: ") and "is shorter than its header says" in err


def test_generate_without_a_tokenizer_says_so(good_checkpoint, capsys):
    status = main(["generate", "--checkpoint", str(good_checkpoint), "--prompt", "hello", "--tier", "reference",
                   "--device", "cpu"])
    err = capsys.readouterr().err
    assert status == 2 and len(err.splitlines()) == 1
    assert err == (f"error: {good_checkpoint} has no tokenizer: none of tokenizer.json, tokenizer.model, vocab.json is "
                   "there (generate encodes the prompt and decodes the output with the checkpoint's tokenizer)\n")


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_fp16_and_fp32_checkpoints_convert(dtype, tmp_path):
    save_text_checkpoint(tmp_path, **{k: v.to(dtype) for k, v in WEIGHTS.items()})
    config, weights = load_checkpoint(tmp_path, dtype=torch.bfloat16)
    assert config.hidden_size == CONFIG.hidden_size
    for name, t in WEIGHTS.items():
        assert weights[name].dtype == torch.bfloat16, name
        assert torch.equal(weights[name], t.to(dtype).to(torch.bfloat16)), name


def test_nonfinite_weights_load_when_asked(good_checkpoint, tmp_path, capsys):
    path, _ = broken("NaN in a weight", good_checkpoint, tmp_path)
    _, weights = load_checkpoint(path, allow_nonfinite=True)
    assert weights["model.layers.0.mlp.up_proj.weight"].isnan().sum() == 1
    status = main(["diff", "--config", "tiny", "--checkpoint", str(path), "--tiers", "reference", "--device", "cpu",
                   "--prompt-len", "1", "--decode-steps", "0", "--allow-nonfinite-weights"])
    assert status in (0, 1) and "error:" not in capsys.readouterr().err


@pytest.mark.parametrize("text", ["{", "[1, 2]", '{"eos_token_id": "two"}'])
def test_a_broken_generation_config_is_one_line(tmp_path, text):
    from compare.generate import eos_ids

    (tmp_path / "generation_config.json").write_text(text)
    with pytest.raises(CheckpointError, match=r"generation_config.json"):
        eos_ids(ModelConfig.tiny(), str(tmp_path))
