"""`python -m compare generate` on the CPU with a tiny checkpoint made here (transformers
weights + a word-level tokenizer with a chat template): streaming, greedy and sampling,
EOS and max-new-tokens, the speed report, the no-checkpoint mode, one-line errors; and
the sampling rules."""

import json
import shutil
import sys

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from compare.__main__ import main
from compare.hf_tier import HFTier
from compare.sampling import choose
from reference import ModelConfig, ReferenceTier

SPECIALS = ["<unk>", "<|endoftext|>", "<|im_start|>", "<|im_end|>"]
WORDS = ["user", "assistant", "hello", "world", "the", "cat", "sat"]
CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }} {{ m['content'] }}<|im_end|>{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant {% endif %}")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny Qwen3.5 checkpoint folder: config, safetensors, tokenizer, chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen3_5ForCausalLM, Qwen3_5TextConfig

    folder = tmp_path_factory.mktemp("ckpt")
    config = ModelConfig.tiny()
    torch.manual_seed(0)
    Qwen3_5ForCausalLM(Qwen3_5TextConfig(**config.to_hf_dict())).save_pretrained(folder)
    tokens = SPECIALS + WORDS + [f"w{i}" for i in range(config.vocab_size - len(SPECIALS) - len(WORDS))]
    word_level = Tokenizer(models.WordLevel({t: i for i, t in enumerate(tokens)}, unk_token="<unk>"))
    word_level.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    word_level.decoder = decoders.WordPiece()  # joins words with spaces
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=word_level, unk_token="<unk>", eos_token="<|endoftext|>",
                                        additional_special_tokens=["<|im_start|>", "<|im_end|>"])
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(folder)
    return folder


def run(capsys, *argv):
    status = main(["generate", *argv])
    out = capsys.readouterr()
    return status, out.out, out.err


class Recorder:
    """A stdout that remembers each write and how many decode steps had run by then."""

    def __init__(self, steps):
        self.steps, self.writes = steps, []

    def write(self, text):
        if text:
            self.writes.append((text, self.steps[0]))

    def flush(self):
        pass


@pytest.mark.parametrize("tier", ["reference", "hf"])
def test_greedy_streams_text_and_stops_at_max_new_tokens(checkpoint, tier, capsys, monkeypatch):
    steps = [0]
    tier_class = {"reference": ReferenceTier, "hf": HFTier}[tier]
    real_decode = tier_class._decode

    def counting_decode(self, *a, **k):
        steps[0] += 1
        return real_decode(self, *a, **k)

    monkeypatch.setattr(tier_class, "_decode", counting_decode)
    out = Recorder(steps)
    monkeypatch.setattr(sys, "stdout", out)
    status = main(["generate", "--checkpoint", str(checkpoint), "--prompt", "hello world", "--tier", tier,
                   "--max-new-tokens", "5"])
    err = capsys.readouterr().err
    assert status == 0
    words = "".join(t for t, _ in out.writes).split()
    assert len(words) == 5 and all(w in WORDS or w.startswith("w") for w in words)
    # streamed: word i is written once the step that consumes it is queued (the device never waits
    # for the printing; on a CPU the step has run) and before the next one is (the first word came
    # with the prompt); after the last word no step is queued
    word_writes = [n for t, n in out.writes if t.strip()]
    assert word_writes == [1, 2, 3, 4, 4] and steps[0] == 4
    assert "stopped at --max-new-tokens 5" in err
    assert "prompt: 2 tokens in" in err and "generation: 5 new tokens, 4 decode steps in" in err and "tok/s" in err


def test_greedy_is_deterministic_and_sampling_follows_the_seed(checkpoint, capsys):
    base = ["--checkpoint", str(checkpoint), "--prompt", "the cat sat", "--tier", "reference", "--max-new-tokens", "8"]
    greedy = [run(capsys, *base)[1] for _ in range(2)]
    assert greedy[0] == greedy[1]
    hot = base + ["--temperature", "5", "--top-k", "400", "--top-p", "0.99"]
    a, b, c = (run(capsys, *hot, "--seed", s) for s in ("1", "1", "2"))
    assert a[0] == 0 and a[1] == b[1] and a[1] != c[1]
    assert "temperature 5.0, top-k 400, top-p 0.99, seed 1" in a[2]
    assert len(a[1].split()) == 8


def test_chat_template(checkpoint, capsys):
    status, out, err = run(capsys, "--checkpoint", str(checkpoint), "--prompt", "hello world", "--chat",
                           "--tier", "reference", "--max-new-tokens", "3")
    assert status == 0 and len(out.split()) == 3
    assert "7 prompt tokens" in err  # <|im_start|> user hello world <|im_end|> <|im_start|> assistant


def test_stops_at_the_checkpoints_eos(checkpoint, tmp_path, capsys):
    from transformers import AutoTokenizer

    folder = tmp_path / "ckpt"
    shutil.copytree(checkpoint, folder)
    base = ["--checkpoint", str(folder), "--prompt", "hello", "--tier", "reference", "--max-new-tokens", "6",
            "--temperature", "5", "--seed", "1"]  # seeded sampling: varied words, the same each run
    words = run(capsys, *base)[1].split()
    assert len(words) == 6 and words[3] != words[0]
    # make the fourth word an EOS id (generation_config.json adds to config.json's)
    eos = AutoTokenizer.from_pretrained(folder).convert_tokens_to_ids(words[3])
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": [eos]}))
    status, out, err = run(capsys, *base)
    assert status == 0 and out.split() == words[:words.index(words[3])]
    assert f"stopped at EOS id {eos}" in err


def test_without_a_checkpoint_prints_ids(capsys):
    status, out, err = run(capsys, "--tier", "reference", "--config", "tiny", "--prompt-ids", "1,2,3",
                           "--max-new-tokens", "4")
    assert status == 0
    ids = [int(t) for t in out.split()]
    assert len(ids) == 4 and all(0 <= i < ModelConfig.tiny().vocab_size for i in ids)
    assert "random weights" in err and "noise" in err and "3 prompt tokens" in err
    status, out, err = run(capsys, "--tier", "reference", "--config", "tiny", "--max-new-tokens", "2")
    assert status == 0 and len(out.split()) == 2 and "random prompt ids:" in err


@pytest.mark.parametrize("argv, message", [
    (["--tier", "nope"], "unknown tier 'nope'"),
    (["--tier", "megakernel"], "tier 'megakernel' cannot run on cpu"),
    (["--checkpoint", "/no/such/dir", "--prompt", "hi"], "does not exist"),
    (["--max-new-tokens", "0"], "--max-new-tokens 0: expected at least 1"),
    (["--checkpoint", "CKPT", "--prompt", ""], "--prompt is empty"),
    (["--checkpoint", "CKPT", "--prompt", "   "], "--prompt is empty"),
    (["--prompt-ids", ""], "--prompt-ids is empty"),
    (["--prompt-ids", "1,two"], "expected comma-separated token ids"),
    (["--prompt-ids", "1,9999"], "outside the vocabulary"),
    (["--checkpoint", "CKPT"], "expected --prompt TEXT or --prompt-ids"),
    (["--prompt", "hi"], "--prompt needs --checkpoint"),
    (["--top-p", "0"], "--top-p 0.0"),
])
def test_bad_input_is_one_line(checkpoint, capsys, argv, message):
    if "megakernel" in argv and torch.cuda.is_available():
        pytest.skip("the megakernel may run on this machine")
    argv = [str(checkpoint) if a == "CKPT" else a for a in argv]
    status, out, err = run(capsys, "--config", "tiny", "--device", "cpu", *argv)
    assert status == 2 and out == ""
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0] and "Traceback" not in err


# ---- sampling --------------------------------------------------------------------------------
def test_greedy_and_degenerate_sampling_pick_the_argmax():
    logits = torch.tensor([0.1, 2.0, -1.0, 1.9])
    gen = torch.Generator().manual_seed(0)
    assert choose(logits) == 1
    assert choose(logits, temperature=1.0, top_k=1, generator=gen) == 1
    assert choose(logits, temperature=1.0, top_p=1e-6, generator=gen) == 1


@given(st.lists(st.floats(-10, 10), min_size=2, max_size=40), st.integers(1, 40), st.floats(0.05, 1.0),
       st.integers(0, 2**31 - 1))
def test_samples_stay_in_top_k_and_the_nucleus(values, top_k, top_p, seed):
    logits = torch.tensor(values)
    token = choose(logits, temperature=0.7, top_k=top_k, top_p=top_p, generator=torch.Generator().manual_seed(seed))
    rank = int((logits > logits[token]).sum())  # how many tokens are strictly likelier
    assert rank < top_k
    kth = torch.topk(logits, min(top_k, len(values))).values[-1]
    kept = torch.sort(logits[logits >= kth] / 0.7, descending=True).values
    assert torch.softmax(kept, -1)[:rank].sum() < top_p + 1e-5  # the likelier ones had not reached top_p


def tiny_greedy_run(n):
    """The tiny reference tier (fp32, seed 0), a fresh-state factory (→ the state after the prompt
    5, 6, 7 and its first greedy id) and the first n greedy ids of a plain decode_argmax loop."""
    import torch

    from reference import ReferenceTier, random_weights

    config = ModelConfig.tiny()
    tier = ReferenceTier(config, random_weights(config, seed=0), device="cpu", dtype=torch.float32)

    def fresh():
        state = tier.new_state(1, 32)
        return state, tier.prefill(torch.tensor([[5, 6, 7]]), state).argmax(-1)

    state, ids = fresh()
    want = [int(ids[0])]
    for _ in range(n - 1):
        ids = tier.decode_argmax(ids, state)
        want.append(int(ids[0]))
    return tier, fresh, want


def test_stream_greedy_against_a_loop_that_waits():
    """timing.stream_greedy gives the tokens of a plain decode_argmax loop; at a stop id it returns
    the tokens before it with one step launched past them (the one queued ahead), and with
    limit 1 it launches none."""
    import torch

    from compare.timing import stream_greedy

    tier, fresh, want = tiny_greedy_run(6)
    state, first = fresh()
    seen = []
    tokens, reason, steps = stream_greedy(tier, first, state, 6, on_token=seen.append)
    assert tokens == seen == want and reason == "--max-new-tokens 6" and steps == 5 and state.seq_len == 3 + 5

    class Scripted:  # a tier whose greedy ids are 11, 12, 13, ...: the stop logic alone
        device = "cpu"

        def decode_argmax(self, ids, state):
            state.append(int(ids[0]))  # the ids this step consumed
            return ids + 1

    consumed = []
    tokens, reason, steps = stream_greedy(Scripted(), torch.tensor([10]), consumed, 6, stop={13})
    assert tokens == [10, 11, 12] and reason == "EOS id 13" and steps == 4 and consumed == [10, 11, 12, 13]
    state, first = fresh()
    assert stream_greedy(tier, first, state, 1) == ([want[0]], "--max-new-tokens 1", 0) and state.seq_len == 3


def test_launch_greedy_stops_at_a_stop_id_without_consuming_it():
    """timing.launch_greedy (decode_greedy underneath: the megakernel's one launch, here the
    reference's step-by-step default) gives the tokens of a plain decode_argmax loop; at a stop id
    it returns the tokens before it and the state has consumed exactly those; limit 1 runs no step;
    greedy_tokens picks it for a tier with many_tokens_per_launch."""
    import torch

    from compare import timing

    tier, fresh, want = tiny_greedy_run(8)
    state, first = fresh()
    seen = []
    tokens, reason, steps = timing.launch_greedy(tier, first, state, 6, on_token=seen.append)
    assert tokens == seen == want[:6] and reason == "--max-new-tokens 6" and steps == 5 and state.seq_len == 3 + 5
    state, first = fresh()
    assert timing.launch_greedy(tier, first, state, 1) == ([want[0]], "--max-new-tokens 1", 0) and state.seq_len == 3
    assert timing.launch_greedy(tier, first, state, 5, stop={want[0]}) == ([], f"EOS id {want[0]}", 0)

    class Scripted:  # greedy ids 11, 12, 13, ...: the stop logic alone (decode_greedy's contract)
        def decode_greedy(self, ids, consumed, steps, stop_ids=(), on_step=None):
            rows = []
            for i in range(steps):
                consumed.append(int(ids[0]))
                ids = ids + 1
                rows.append([int(ids[0])])
                on_step(i, rows[-1])
                if rows[-1][0] in stop_ids:
                    break
            return torch.tensor(rows)

    consumed = []
    tokens, reason, steps = timing.launch_greedy(Scripted(), torch.tensor([10]), consumed, 8, stop={13})
    assert tokens == [10, 11, 12] and reason == "EOS id 13" and steps == 3 and consumed == [10, 11, 12]

    class Many:
        many_tokens_per_launch = True

    class One:
        many_tokens_per_launch = False

    calls = []
    for cls in (Many, One):
        try:
            orig = (timing.launch_greedy, timing.stream_greedy)
            timing.launch_greedy = lambda *a: calls.append("launch") or ([], "", 0)
            timing.stream_greedy = lambda *a: calls.append("stream") or ([], "", 0)
            timing.greedy_tokens(cls(), None, None, 3)
        finally:
            timing.launch_greedy, timing.stream_greedy = orig
    assert calls == ["launch", "stream"]


def test_temperature_alone_is_the_specs_draw(capsys):
    """--temperature without --top-k / --top-p: the tokens reference/sampling.py draws (the first from
    the prompt's logits at its last position, the rest by decode_sample), the same for a seed and
    other for another."""
    import torch

    from reference import ModelConfig, ReferenceTier, random_weights, sampling

    args = ["--tier", "reference", "--config", "tiny", "--prompt-ids", "1,2,3", "--max-new-tokens", "6",
            "--temperature", "2"]
    a, b, c = (run(capsys, *args, "--seed", s) for s in ("5", "5", "6"))
    assert a[0] == 0 and a[1] == b[1] and a[1] != c[1]
    assert "reference/sampling.py's draw" in a[2]
    config = ModelConfig.tiny()
    tier = ReferenceTier(config, random_weights(config, seed=5, dtype=torch.bfloat16), device="cpu", dtype=torch.bfloat16)  # (generate seeds the weights with --seed)
    state = tier.new_state(1, 9)
    first = sampling.sample(tier.prefill(torch.tensor([[1, 2, 3]]), state), 2.0, 5, [2])
    want = [int(first[0])] + tier.decode_sample(first, state, 5, 2.0, seed=5)[:, 0].tolist()
    assert [int(t) for t in a[1].split()] == want

