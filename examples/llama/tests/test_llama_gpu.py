"""The Llama example on the GPU: the tiny configs against transformers, and the server's continuous
batching giving every request the answer it gets alone."""

import pytest

pytest.importorskip("torch")

import check_reference  # noqa: E402
import gpuos  # noqa: E402
from llama_engine import Engine  # noqa: E402
from server import Request, Scheduler  # noqa: E402


@pytest.mark.parametrize("fold_norms", [True, False], ids=["gains_in_weights", "gains_in_operators"])
def test_tiny_model_matches_transformers(tiny_model, fold_norms):
    r = check_reference.compare(tiny_model, prompt_len=32, steps=64, fold_norms=fold_norms)
    assert r["same_tokens"] >= 32, r
    assert r["ok_err"] and r["ok_step"], r


def test_eight_query_heads_per_kv_head_match_transformers(tiny_g8_model):
    # Each of a KV head's 8 query heads attends in tiles of its own over the same keys and values;
    # 32 + 64 positions take two chunks of 64, a tile each, so the tiles' combination runs too.
    r = check_reference.compare(tiny_g8_model, prompt_len=32, steps=64)
    assert r["same_tokens"] >= 32, r
    assert r["ok_err"] and r["ok_step"], r


@pytest.mark.parametrize("attn", [dict(attn_parts=1), dict(attn_parts=2, chunk=16)],
                         ids=["one_tile_of_two_chunks", "two_tiles_of_three_chunks"])
def test_attention_tiles_of_several_chunks_match_transformers(tiny_g8_model, attn):
    # An attention tile folds its chunks into its statistics one after another: up to 96 positions in
    # one tile of two 64-position chunks, or in two tiles of three 16-position chunks each, which the
    # last of them combines.
    r = check_reference.compare(tiny_g8_model, prompt_len=32, steps=64, engine=attn)
    assert r["same_tokens"] >= 32, r
    assert r["ok_err"] and r["ok_step"], r


def answers(sched, reqs):
    for q in reqs:
        sched.submit(q)
    return [q.tokens(timeout=60) for q in reqs]


def test_batched_requests_answer_as_alone(tiny_model):
    prompts = [[(7 * i + 3 * j) % 1024 for j in range(n)] for i, n in enumerate((5, 17, 1, 9, 12, 30))]
    with gpuos.Runtime() as rt:
        eng = Engine(rt, tiny_model, slots=4, max_pos=128)
        sched = Scheduler(eng)
        alone = [answers(sched, [Request(p, 12, 0.0, 0)])[0] for p in prompts]
        together = answers(sched, [Request(p, 12, 0.0, 0) for p in prompts])
        sampled = [answers(sched, [Request(prompts[1], 12, 0.9, 5)])[0] for _ in range(2)]
        sched.stop()
        eng.close()
    assert together == alone
    assert all(len(a) == 12 for a in alone)
    assert sampled[0] == sampled[1]  # a seeded sample is reproducible
    assert sampled[0] != alone[1]    # and at temperature 0.9 it is not the greedy answer
    assert sched.counters["requests_completed"] == 2 * len(prompts) + 2


def test_steps_launched_ahead_choose_the_tokens_of_steps_one_by_one(tiny_g8_model):
    # Each step launched before the host has read the one before, its rows' tokens taken on the device
    # (prev(i)); every other step lists the sequences in reverse order, so a row takes another row's token.
    from llama_engine import prev

    prompts = [[(5 * i + 11 * j) % 1000 for j in range(n)] for i, n in enumerate((9, 3, 20))]
    B, steps = len(prompts), 24
    with gpuos.Runtime() as rt:
        eng = Engine(rt, tiny_g8_model, slots=B, max_pos=64)

        def one_by_one():
            nxt = [eng.prefill(p, slot=b) for b, p in enumerate(prompts)]
            out = [nxt]
            for s in range(steps):
                nxt = eng.step([(nxt[b], len(prompts[b]) + s, b, 0.0, 0) for b in range(B)])
                out.append(nxt)
            return out

        def ahead():
            first = [eng.prefill(p, slot=b) for b, p in enumerate(prompts)]
            out = [first]
            pend, order = eng.step_async([(first[b], len(prompts[b]), b, 0.0, 0) for b in range(B)]), list(range(B))
            for s in range(1, steps):
                new_order = order[::-1]
                rows = [(prev(order.index(b)), len(prompts[b]) + s, b, 0.0, 0) for b in new_order]
                nxt = eng.step_async(rows)
                toks = pend.result()
                out.append([toks[order.index(b)] for b in range(B)])
                pend, order = nxt, new_order
            toks = pend.result()
            out.append([toks[order.index(b)] for b in range(B)])
            return out

        want = one_by_one()
        got = ahead()
        with pytest.raises(ValueError, match="prev"):
            prev(8)
        eng.close()
    assert got == want
    assert len({t for row in want for t in row}) > 3  # the steps did choose different tokens
