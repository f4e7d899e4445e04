"""The Python front end on CUDA with torch tensors: run on the GPU machine
(`pytest tests/python/test_cuda.py`); without torch or a GPU every test here
is reported as skipped, never as passed."""
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device: the CUDA tests of the Python front end did not run", allow_module_level=True)

import tessera as ts  # noqa: E402
from tessera import _core  # noqa: E402

RMS_SILU = """
func @f(%x: tensor<64x256xf32>, %w: tensor<256xf32>, %g: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %n = tessera.rms_norm %x, %w {eps = 1.0e-06} : (tensor<64x256xf32>, tensor<256xf32>) -> tensor<64x256xf32>
  %m = tessera.mul %n, %g : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
  %y = tessera.silu %m : tensor<64x256xf32> -> tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}
"""


def reference(x, w, g):
    n = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w
    return torch.nn.functional.silu(n * g)


def inputs(seed=0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(64, 256, device="cuda", generator=gen)
    w = torch.randn(256, device="cuda", generator=gen)
    g = torch.randn(64, 256, device="cuda", generator=gen)
    return x, w, g


def test_program_runs_on_torch_tensors_without_copies():
    p = _core.Program(RMS_SILU, "cuda")
    x, w, g = inputs()
    (y,) = p(x, w, g)
    torch.cuda.synchronize()
    assert isinstance(y, torch.Tensor) and y.is_cuda and y.shape == (64, 256)
    assert p.last_pointers["inputs"] == [x.data_ptr(), w.data_ptr(), g.data_ptr()]
    assert p.last_pointers["outputs"] == [y.data_ptr()]
    assert all(launch["placement"] == "native_gpu" for launch in p.last_launches)
    torch.testing.assert_close(y, reference(x, w, g), rtol=1e-5, atol=1e-5)


def test_jit_on_torch_tensors_and_results_fed_back():
    @ts.jit
    def block(x, w, g):
        return ts.silu(ts.rms_norm(x, w, eps=1e-6) * g)

    @ts.jit
    def double(y):
        return y * 2.0

    x, w, g = inputs(1)
    y = block(x, w, g)
    z = double(y)  # a result goes straight back in, on the device
    torch.cuda.synchronize()
    torch.testing.assert_close(z, 2 * reference(x, w, g), rtol=1e-5, atol=1e-5)


def test_launches_go_on_the_callers_stream():
    p = _core.Program(RMS_SILU, "cuda")
    x, w, g = inputs(2)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        (y,) = p(x, w, g)
        y2 = y * 1.0  # torch on the same stream sees the finished result
    side.synchronize()
    torch.testing.assert_close(y2, reference(x, w, g), rtol=1e-5, atol=1e-5)


def test_host_arrays_to_a_cuda_program_are_refused():
    p = _core.Program(RMS_SILU, "cuda")
    x, w, g = (t.cpu() for t in inputs())
    with pytest.raises(ts.Error) as e:
        p(x, w, g)
    assert e.value.code == "E931"


def test_non_contiguous_cuda_tensor_is_refused():
    p = _core.Program(RMS_SILU, "cuda")
    x, w, g = inputs()
    with pytest.raises(ts.Error) as e:
        p(x.t().contiguous().t(), w, g)
    assert e.value.code == "E930"


def test_check_on_cuda_arrays_checks_what_the_call_returns():
    p = _core.Program(RMS_SILU, "cuda")
    x, w, g = inputs(3)
    (y,) = p(x, w, g, check=True)
    report = p.last_check
    assert report["ok"], report["lines"]
    assert "1 results within tolerance" in report["lines"][-1]
    torch.testing.assert_close(y, reference(x, w, g), rtol=1e-5, atol=1e-5)


def test_cupy_arrays_run_without_copies():
    cupy = pytest.importorskip("cupy")
    p = _core.Program(RMS_SILU, "cuda")
    x, w, g = (cupy.from_dlpack(t) for t in inputs(4))
    (y,) = p(x, w, g)
    cupy.cuda.Device().synchronize()
    assert isinstance(y, cupy.ndarray)
    assert p.last_pointers["inputs"] == [x.data.ptr, w.data.ptr, g.data.ptr]
    assert p.last_pointers["outputs"] == [y.data.ptr]
    want = reference(*(torch.from_dlpack(a) for a in (x, w, g)))
    torch.testing.assert_close(torch.from_dlpack(y), want, rtol=1e-5, atol=1e-5)


@ts.jit
def scores(x, w):
    return ts.softmax(x @ w, axis=-1) * 2.0  # two kernels: the matmul, then the softmax


def scores_reference(x, w):
    return torch.softmax(x @ w, dim=-1) * 2.0


def operands(seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(128, 64, device="cuda", generator=gen), torch.randn(64, 96, device="cuda", generator=gen)


def test_several_kernels_launch_as_one_graph_and_arguments_follow_the_arrays():
    x, w = operands(5)
    y = scores(x, w)
    launches = scores.last_launches
    assert len(launches) == 2 and all(launch["graph"] for launch in launches)
    # New arrays (the graph's arguments change), the old ones again, and results kept across calls.
    x2, w2 = operands(6)
    y2 = scores(x2, w2)
    y3 = scores(x, w)
    torch.cuda.synchronize()
    for got, (a, b) in ((y, (x, w)), (y2, (x2, w2)), (y3, (x, w))):
        torch.testing.assert_close(got, scores_reference(a, b), rtol=1e-4, atol=1e-5)
    assert scores.cache_info()["compiles"] == 1


def test_one_graph_on_two_streams_keeps_its_intermediates_apart():
    # The graph owns the intermediate between its kernels; launches on two streams are ordered by the
    # driver, so neither sees the other's intermediate.
    pairs = [operands(10 + i) for i in range(8)]
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    for s in streams:
        s.wait_stream(torch.cuda.current_stream())
    results = []
    for i, (x, w) in enumerate(pairs):
        with torch.cuda.stream(streams[i % 2]):
            results.append(scores(x, w))
    torch.cuda.synchronize()
    for got, (x, w) in zip(results, pairs):
        torch.testing.assert_close(got, scores_reference(x, w), rtol=1e-4, atol=1e-5)


def test_one_kernel_is_a_graph_too():
    p = _core.Program(RMS_SILU, "cuda")
    x, w, g = inputs(9)
    (y,) = p(x, w, g)
    assert [launch["graph"] for launch in p.last_launches] == [True]
    x2, w2, g2 = inputs(10)
    (y2,) = p(x2, w2, g2)  # its arguments follow the arrays
    torch.cuda.synchronize()
    torch.testing.assert_close(y, reference(x, w, g), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(y2, reference(x2, w2, g2), rtol=1e-5, atol=1e-5)


def test_a_named_stream_takes_torch_tensors_through_the_dlpack_handshake():
    p = _core.Program(RMS_SILU, "cuda")
    x, w, g = inputs(7)
    side = torch.cuda.Stream()  # torch's pending work on its current stream is ordered before this one
    (y,) = p(x, w, g, stream=side.cuda_stream)
    side.synchronize()
    torch.testing.assert_close(y, reference(x, w, g), rtol=1e-5, atol=1e-5)


def test_tensors_autograd_tracks_are_refused_unless_grad_is_off():
    p = _core.Program(RMS_SILU, "cuda")
    x, w, g = inputs(8)
    w.requires_grad_(True)
    with pytest.raises(ts.Error) as e:
        p(x, w, g)
    assert e.value.code == "E935"
    with torch.no_grad():
        (y,) = p(x, w, g)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, reference(x, w.detach(), g), rtol=1e-5, atol=1e-5)


def test_bool_and_integer_torch_tensors_in_and_out():
    @ts.jit
    def masked(s, labels):
        n, m = s.shape
        causal = ts.iota((n, 1), 0, ts.int64) >= ts.arange(m)
        return ts.where(causal, s, float("-inf")), labels == 3, labels * 2

    gen = torch.Generator(device="cuda").manual_seed(5)
    s = torch.randn(37, 129, device="cuda", generator=gen)
    labels = torch.randint(0, 8, (37, 129), device="cuda", generator=gen)
    y, hit, twice = masked(s, labels, check=True)
    torch.cuda.synchronize()
    assert hit.dtype == torch.bool and twice.dtype == torch.int64
    tri = torch.ones(37, 129, dtype=torch.bool, device="cuda").tril()
    assert torch.equal(y, torch.where(tri, s, float("-inf")))
    assert torch.equal(hit, labels == 3) and torch.equal(twice, labels * 2)
    assert all(launch["placement"] == "native_gpu" for launch in masked._last.last_launches)


def test_views_and_concat_on_torch_tensors():
    @ts.jit
    def rope_t(x, cos, sin):
        x1, x2 = ts.split(x, 2, axis=-1)
        y = x * cos + ts.concatenate([x2, x1], axis=-1) * sin
        return y.transpose(1, 0, 2), x[:, 1::2].reshape(-1)

    gen = torch.Generator(device="cuda").manual_seed(7)
    x = torch.randn(6, 32, 64, device="cuda", generator=gen)
    cos = torch.randn(32, 64, device="cuda", generator=gen)
    sin = torch.randn(32, 64, device="cuda", generator=gen)
    y, flat = rope_t(x, cos, sin, check=True)
    torch.cuda.synchronize()
    x1, x2 = x.chunk(2, dim=-1)
    torch.testing.assert_close(y, (x * cos + torch.cat([x2, x1], -1) * sin).transpose(0, 1), rtol=1e-6, atol=1e-6)
    assert torch.equal(flat, x[:, 1::2].reshape(-1))


def test_attention_on_torch_tensors_against_sdpa():
    gen = torch.Generator(device="cuda").manual_seed(5)
    q = torch.randn(2, 8, 300, 128, device="cuda", generator=gen, dtype=torch.bfloat16)
    k = torch.randn(2, 2, 300, 128, device="cuda", generator=gen, dtype=torch.bfloat16)
    v = torch.randn(2, 2, 300, 128, device="cuda", generator=gen, dtype=torch.bfloat16)
    fn = ts.jit(lambda q, k, v: ts.attention(q, k, v, causal=True))
    o = fn(q, k, v)
    torch.cuda.synchronize()
    want = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True,
                                                            enable_gqa=True)
    assert o.dtype == torch.bfloat16 and o.shape == q.shape
    torch.testing.assert_close(o.float(), want, rtol=2e-2, atol=2e-2)


def test_grad_on_torch_tensors_matches_autograd():
    def loss(w, x):
        return ts.mean(ts.log_softmax(x @ w, axis=-1) * x[:, :8])

    gen = torch.Generator(device="cuda").manual_seed(5)
    w = torch.randn(64, 8, device="cuda", generator=gen)
    x = torch.randn(128, 64, device="cuda", generator=gen)
    got = ts.grad(loss)(w, x)
    torch.cuda.synchronize()
    assert got.is_cuda and got.shape == (64, 8)
    wr = w.clone().requires_grad_()
    (torch.log_softmax(x @ wr, -1) * x[:, :8]).mean().backward()
    torch.testing.assert_close(got, wr.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_norm_gradients_on_torch_tensors_match_autograd(dtype):
    # one row kernel each (dx in one pass; dw, db from per-program partial sums), resident rows of 4096
    dt = getattr(torch, dtype)

    def loss(x, w, b, v, t):
        h = ts.layer_norm(x, w, b)
        return ts.sum(ts.cast(ts.rms_norm(h, v), "f32") * t)

    gen = torch.Generator(device="cuda").manual_seed(9)
    x = torch.randn(2048, 4096, device="cuda", generator=gen).to(dt)
    w, v = [(torch.rand(4096, device="cuda", generator=gen) + 0.5).to(dt) for _ in range(2)]
    b = torch.randn(4096, device="cuda", generator=gen).to(dt)
    t = torch.randn(2048, 4096, device="cuda", generator=gen)
    got = ts.grad(loss, argnums=(0, 1, 2, 3))(x, w, b, v, t)
    torch.cuda.synchronize()
    leaves = [a.clone().requires_grad_() for a in (x, w, b, v)]
    h = torch.nn.functional.layer_norm(leaves[0], (4096,), leaves[1], leaves[2], 1e-5)
    (torch.nn.functional.rms_norm(h, (4096,), leaves[3], 1e-6).float() * t).sum().backward()
    tol = dict(rtol=2e-2, atol=2e-2) if dtype == "bfloat16" else dict(rtol=1e-3, atol=1e-3)
    for g, leaf in zip(got, leaves):
        assert g.is_cuda and g.dtype == dt
        scale = leaf.grad.float().abs().max().item()
        torch.testing.assert_close(g.float() / scale, leaf.grad.float() / scale, **tol)


def test_training_example_on_the_gpu_follows_numpy():
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    import numpy as np
    import train_mlp

    curve, ref_curve, ours, ref = train_mlp.train(
        40, lambda a: torch.from_numpy(a).cuda(), lambda t: t.cpu().numpy())
    np.testing.assert_allclose(curve, ref_curve, rtol=1e-3)
    assert curve[-1] < 0.35 * curve[0]


def test_embedding_and_cross_entropy_on_torch_tensors():
    gen = torch.Generator(device="cuda").manual_seed(9)
    table = torch.randn(1000, 256, device="cuda", generator=gen, dtype=torch.bfloat16)
    ids = torch.randint(-1000, 1000, (4, 77), device="cuda", generator=gen)
    emb = ts.jit(lambda t, i: ts.take(t, i, axis=0) * 2.0)
    got = emb(table, ids, check=True)
    torch.cuda.synchronize()
    assert torch.equal(got, table[ids % 1000] * 2)
    assert all(launch["placement"] == "native_gpu" for launch in emb._last.last_launches)
    bad = ids.clone()
    bad[3, 5] = 1000
    with pytest.raises(ts.ExecutionError, match="E615"):
        emb(table, bad)

    def ce(z, labels):
        return -ts.mean(ts.take_along_axis(ts.log_softmax(z, axis=-1), labels[:, None], axis=-1))

    z = torch.randn(512, 3000, device="cuda", generator=gen)
    labels = torch.randint(0, 3000, (512,), device="cuda", generator=gen)
    loss, dz = ts.value_and_grad(ce)(z, labels)
    torch.cuda.synchronize()
    zr = z.clone().requires_grad_()
    want = torch.nn.functional.cross_entropy(zr, labels)
    want.backward()
    torch.testing.assert_close(loss, want.detach(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(dz, zr.grad, rtol=1e-4, atol=1e-7)


def test_in_place_adamw_on_torch_tensors():
    @ts.jit(in_place=(0, 1, 2))
    def adamw(p, m, v, g, c1, c2):
        m2 = 0.9 * m + 0.1 * g
        v2 = 0.999 * v + 0.001 * g * g
        return p - 1e-2 * (m2 * c1 / (ts.sqrt(v2 * c2) + 1e-8) + 0.01 * p), m2, v2

    gen = torch.Generator(device="cuda").manual_seed(4)
    p = torch.randn(1000, 257, device="cuda", generator=gen)
    ref = p.clone().requires_grad_()
    opt = torch.optim.AdamW([ref], lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    m, v = torch.zeros_like(p), torch.zeros_like(p)
    pointers = [p.data_ptr(), m.data_ptr(), v.data_ptr()]
    for t in range(1, 4):
        g = torch.randn(1000, 257, device="cuda", generator=gen)
        c1 = torch.tensor(1 / (1 - 0.9**t), device="cuda")
        c2 = torch.tensor(1 / (1 - 0.999**t), device="cuda")
        out = adamw(p, m, v, g, c1, c2, check=(t == 2))
        ref.grad = g.clone()
        opt.step()
        assert [o.data_ptr() for o in out] == pointers
    torch.cuda.synchronize()
    torch.testing.assert_close(p, ref.detach(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["bool", "bias"])
def test_sdpa_with_a_mask_on_torch_tensors_matches_torch(kind):
    # torch's attn_mask on the Hopper block: a bool padding mask per batch (one row of batch 1 hidden
    # whole: zeros) or a bf16 bias per head, grouped-query heads, ragged lengths
    gen = torch.Generator(device="cuda").manual_seed(8)
    q = torch.randn(2, 8, 150, 128, device="cuda", generator=gen).to(torch.bfloat16)
    k, v = (torch.randn(2, 2, 170, 128, device="cuda", generator=gen).to(torch.bfloat16) for _ in range(2))
    if kind == "bool":
        mask = torch.rand(2, 1, 150, 170, device="cuda", generator=gen) > 0.3
        mask[1, 0, 7] = False
    else:
        mask = (torch.randn(1, 8, 150, 170, device="cuda", generator=gen) * 2).to(torch.bfloat16)
    sdpa = ts.jit(lambda q, k, v, m: ts.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True))
    got = sdpa(q, k, v, mask)
    torch.cuda.synchronize()
    assert all(launch["placement"] == "native_gpu" for launch in sdpa.last_launches)
    ref_mask = mask if kind == "bool" else mask.float()  # torch wants the bias in the (f32) query's dtype
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=ref_mask,
                                                           enable_gqa=True)
    if kind == "bool":  # (torch's backends differ there: NaN or zeros)
        assert (got[1, :, 7] == 0).all()
        ref[1, :, 7] = 0
    torch.testing.assert_close(got.float(), ref, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("causal", [True, False])
def test_attention_gradient_on_torch_tensors_matches_autograd(causal):
    # bf16, grouped-query heads, lengths off the block sizes: dq, dk, dv against torch autograd through SDPA
    # (whose causal mask is aligned to the start: equal lengths there)
    def loss(q, k, v, t):
        return ts.sum(ts.cast(ts.attention(q, k, v, causal=causal), "f32") * t)

    gen = torch.Generator(device="cuda").manual_seed(6)
    q = torch.randn(2, 8, 200, 64, device="cuda", generator=gen).to(torch.bfloat16)
    sk = 200 if causal else 300
    k, v = (torch.randn(2, 2, sk, 64, device="cuda", generator=gen).to(torch.bfloat16) for _ in range(2))
    t = torch.randn(2, 8, 200, 64, device="cuda", generator=gen)
    got = ts.grad(loss, argnums=(0, 1, 2))(q, k, v, t)
    torch.cuda.synchronize()
    leaves = [a.clone().requires_grad_() for a in (q, k, v)]
    o = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=causal, enable_gqa=True)
    (o.float() * t).sum().backward()
    for g, leaf in zip(got, leaves):
        assert g.is_cuda and g.dtype == torch.bfloat16 and g.shape == leaf.shape
        scale = leaf.grad.float().abs().max().item()
        torch.testing.assert_close(g.float() / scale, leaf.grad.float() / scale, rtol=2e-2, atol=2e-2)


def test_transformer_training_on_the_gpu_follows_pytorch():
    # examples/train_transformer.py's GPU configuration trained by Tessera (attention forward and backward
    # in bfloat16 on the CUDA blocks, the rest in float32) and by PyTorch (SDPA in bfloat16, autograd,
    # torch.optim.AdamW) from the same parameters on the same batches: the loss curves agree
    import os
    import sys

    import numpy as np

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    import train_transformer as ex

    cfg, steps = ex.GPU, 30
    to = lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda()  # noqa: E731
    curve, _ = ex.train(steps, cfg=cfg, to=to)

    def rms(x, g):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * g

    def heads(x, n):
        return x.view(cfg.batch, cfg.seq, n, cfg.head_dim).transpose(1, 2)

    def torch_loss(params, tokens, targets):
        emb, g1, wq, wk, wv, wo, g2, w1, w2, gf = params
        x = emb[tokens]
        h = rms(x, g1)
        q, k, v = (heads(h @ w, n).to(torch.bfloat16) for w, n in ((wq, cfg.heads), (wk, cfg.kv_heads),
                                                                    (wv, cfg.kv_heads)))
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True).float()
        x = x + a.transpose(1, 2).reshape(cfg.batch, cfg.seq, -1) @ wo
        x = x + torch.nn.functional.silu(rms(x, g2) @ w1) @ w2
        logp = torch.log_softmax(rms(x, gf) @ emb.T, -1)
        return -logp.gather(-1, targets[..., None]).mean()

    params = [to(p).requires_grad_() for p in ex.init(0, cfg=cfg)]
    opt = torch.optim.AdamW(params, lr=ex.LR, betas=(ex.BETA1, ex.BETA2), eps=ex.EPS, weight_decay=ex.WEIGHT_DECAY)
    ref = []
    for _, tokens, targets, _ in ex.batches(steps, 0, cfg):
        opt.zero_grad()
        value = torch_loss(params, to(tokens), to(targets))
        value.backward()
        opt.step()
        ref.append(value.item())
    np.testing.assert_allclose(curve, ref, rtol=3e-2)
    assert np.mean(curve[-5:]) < 0.5 * curve[0], curve
