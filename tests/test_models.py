"""Whole models through `kernels.kernelize`: small transformers models built from their configs
(random weights, no download) give the same logits with this package's layers as without, and
the layers' forwards really run the kernels (counted with the profiler)."""

import copy
from pathlib import Path

import pytest
import torch

from conftest import load_kernel, restore_transformers_kernel_funcs

# hub layer name (as transformers' decorators spell it) -> this package's layer class name
LAYERS = {
    "RMSNorm": "RMSNorm",
    "rotary_pos_emb": "RotaryPosEmb",
    "SiLU": "SiLU",
    "GeluTanh": "GeluTanh",
}
# Relative error of the logits (||a - b|| / ||b||): the layers round where transformers'
# modules round, so what differs is fp32 rounding order (rsqrt, sums) carried through the model.
LOGITS_RTOL = {torch.float32: 1e-5, torch.bfloat16: 2e-2}


def kernel_mapping(kernel, device_type: str):
    from kernels import LocalLayerRepository

    variant = Path(kernel.__file__).parent  # the exact build variant loaded for this backend
    return {
        hub_name: {device_type: LocalLayerRepository(repo_path=variant, layer_name=layer)}
        for hub_name, layer in LAYERS.items()
    }


@pytest.fixture(autouse=True)
def _original_kernel_funcs():
    """kernelize replaces the forward of transformers' process-wide kernel functions: every
    test starts and ends with the original forwards, so that its reference model runs without
    this package."""
    restore_transformers_kernel_funcs()
    yield
    restore_transformers_kernel_funcs()


def count_ops(fn, op_suffix: str) -> int:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return sum(e.count for e in prof.key_averages() if e.key.endswith(op_suffix))


def tiny_llama(dtype, device, hidden_act="silu"):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                      rms_norm_eps=1e-5, hidden_act=hidden_act)
    return _init(LlamaForCausalLM(cfg), dtype, device)


def tiny_qwen3(dtype, device):
    """Qwen3: LlamaRMSNorm copies also as per-head q_norm / k_norm, GQA, head_dim 64."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    cfg = Qwen3Config(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                      max_position_embeddings=128, rms_norm_eps=1e-6)
    return _init(Qwen3ForCausalLM(cfg), dtype, device)


def _init(model, dtype, device):
    torch.manual_seed(0)
    model = model.to(device=device, dtype=dtype).eval()
    for m in model.modules():  # non-trivial norm weights
        if type(m).__name__.endswith("RMSNorm"):
            m.weight.data = (1 + 0.2 * torch.randn_like(m.weight, dtype=torch.float32)).to(dtype)
    return model


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_kernelize_llama(backend, dtype):
    from kernels import Mode, kernelize, use_kernel_mapping

    kernel = load_kernel(backend)
    model = tiny_llama(dtype, backend)
    ids = torch.randint(0, 512, (2, 24), device=backend)
    with torch.no_grad():
        ref = model(ids).logits.double()
    with use_kernel_mapping(kernel_mapping(kernel, backend)):
        kernelize(model, mode=Mode.INFERENCE, device=backend)
    norms = [m for m in model.modules() if type(m).__name__ == "LlamaRMSNorm"]
    assert norms and all(m.forward.__func__ is kernel.layers.RMSNorm.forward for m in norms)
    with torch.no_grad():
        out = model(ids).logits.double()
        n = count_ops(lambda: model(ids), "::rms_norm")
    assert n == len(norms), f"{n} rms_norm kernel calls for {len(norms)} RMSNorm modules"
    err = ((out - ref).norm() / ref.norm()).item()
    assert err < LOGITS_RTOL[dtype], f"logits relative error {err:.3g}"


# model -> (builder, activation kernel its MLP calls)
MODELS = {
    "llama": (tiny_llama, "::silu"),
    "llama_gelu_tanh": (lambda dtype, device: tiny_llama(dtype, device, "gelu_pytorch_tanh"),
                        "::gelu_tanh"),
    "qwen3": (tiny_qwen3, "::silu"),
}


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", list(MODELS))
def test_kernelize_all_layers(backend, dtype, name):
    """Every layer this package maps for transformers at once (RMSNorm, rotary_pos_emb, SiLU,
    GeluTanh): same logits, and each kernel runs where the model calls the layer."""
    from kernels import Mode, kernelize, use_kernel_mapping

    build, act_op = MODELS[name]
    kernel = load_kernel(backend)
    model = build(dtype, backend)
    layers = model.config.num_hidden_layers
    ids = torch.randint(0, 512, (2, 24), device=backend)
    with torch.no_grad():
        ref = model(ids).logits.double()
    with use_kernel_mapping(kernel_mapping(kernel, backend)):
        kernelize(model, mode=Mode.INFERENCE, device=backend)
    norms = [m for m in model.modules() if type(m).__name__.endswith("RMSNorm")]
    with torch.no_grad():
        out = model(ids).logits.double()
        calls = {op: count_ops(lambda: model(ids), op) for op in ("::rms_norm", "::rope_qk", act_op)}
    # Qwen3's q_norm / k_norm are RMSNorms too, so len(norms) counts them.
    assert calls == {"::rms_norm": len(norms), "::rope_qk": layers, act_op: layers}
    err = ((out - ref).norm() / ref.norm()).item()
    assert err < LOGITS_RTOL[dtype], f"logits relative error {err:.3g}"


def tiny_falcon(dtype, device, new_decoder_architecture):
    from transformers import FalconConfig, FalconForCausalLM

    cfg = FalconConfig(vocab_size=512, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                       num_kv_heads=2, new_decoder_architecture=new_decoder_architecture,
                       parallel_attn=True, bias=False)
    torch.manual_seed(0)
    model = FalconForCausalLM(cfg).to(device=device, dtype=dtype).eval()
    for m in model.modules():  # non-trivial affine
        if isinstance(m, torch.nn.LayerNorm):
            m.weight.data = (1 + 0.2 * torch.randn_like(m.weight, dtype=torch.float32)).to(dtype)
            m.bias.data = (0.1 * torch.randn_like(m.bias, dtype=torch.float32)).to(dtype)
    return model


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("new_arch", [False, True], ids=["falcon_7b", "falcon_40b"])
def test_patch_falcon_layernorm(backend, dtype, new_arch):
    """Falcon's plain nn.LayerNorms (no hub decorator) through `patch_falcon_layernorm`: same
    logits, one adaln call per LayerNorm (7B style: input_layernorm; 40B style: ln_attn, ln_mlp;
    plus ln_f)."""
    kernel = load_kernel(backend)
    model = tiny_falcon(dtype, backend, new_arch)
    ids = torch.randint(0, 512, (2, 24), device=backend)
    with torch.no_grad():
        ref = model(ids).logits.double()
    n = kernel.integrations.patch_falcon_layernorm(model)
    assert n == (2 if new_arch else 1) * model.config.num_hidden_layers + 1
    with torch.no_grad():
        out = model(ids).logits.double()
        calls = count_ops(lambda: model(ids), "::adaln")
    assert calls == n
    err = ((out - ref).norm() / ref.norm()).item()
    assert err < LOGITS_RTOL[dtype], f"logits relative error {err:.3g}"


def test_rope_layer_other_device(kernel, backend):
    """`apply_rotary_pos_emb` is one module for the process: kernelizing a model with this
    build's layers also gives the layer to models on other devices, never kernelized. On a
    device the build has no kernel for, it takes the eager formula with a warning (not an
    error). Checked directly (the layer's device set emptied) and, on a GPU machine, with a CPU
    model kernelized and a CUDA model after it."""
    import sys

    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    layer_mod = sys.modules[kernel.layers.RotaryPosEmb.__module__]
    q = torch.randn(2, 4, 9, 64, device=backend).to(torch.bfloat16)
    k = torch.randn(2, 2, 9, 64, device=backend).to(torch.bfloat16)
    cos, sin = (torch.randn(2, 9, 64, device=backend).to(torch.bfloat16) for _ in range(2))
    ref = type(apply_rotary_pos_emb).forward(apply_rotary_pos_emb, q, k, cos, sin)
    layer = kernel.layers.RotaryPosEmb()
    saved = layer_mod._KERNEL_DEVICES
    layer_mod._KERNEL_DEVICES = frozenset()
    layer_mod._warned.discard(backend)
    try:
        with pytest.warns(UserWarning, match=f"no {backend} kernel"):
            out = layer(q, k, cos, sin)
    finally:
        layer_mod._KERNEL_DEVICES = saved
    for o, r in zip(out, ref):
        torch.testing.assert_close(o, r, rtol=0, atol=0)  # the same formula, bit for bit
    assert backend in layer_mod._KERNEL_DEVICES

    if backend != "cuda":
        return
    from kernels import Mode, kernelize, use_kernel_mapping

    cpu_kernel = load_kernel("cpu")
    cpu_model = tiny_llama(torch.float32, "cpu")
    with use_kernel_mapping(kernel_mapping(cpu_kernel, "cpu")):
        kernelize(cpu_model, mode=Mode.INFERENCE, device="cpu")
    model = tiny_llama(torch.float32, "cuda")  # never kernelized
    ids = torch.randint(0, 512, (2, 24), device="cuda")
    with torch.no_grad():
        kernelized_rope = model(ids).logits  # the CPU build's layer, on CUDA tensors
        restore_transformers_kernel_funcs()
        expected = model(ids).logits
    torch.testing.assert_close(kernelized_rope, expected, rtol=0, atol=0)


def tiny_mistral(dtype, device):
    from transformers import MistralConfig, MistralForCausalLM

    cfg = MistralConfig(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=3,
                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                        rms_norm_eps=1e-5)
    return _init(MistralForCausalLM(cfg), dtype, device)


# model -> builder, for fuse_decoder_residuals (LLaMA's decoder layer in every one of them)
FUSE_MODELS = {"llama": tiny_llama, "mistral": tiny_mistral, "qwen3": tiny_qwen3}


def fuse_setup(name, dtype, backend):
    """The kernel, a tiny model, its input ids and its own logits (float64)."""
    kernel = load_kernel(backend)
    model = FUSE_MODELS[name](dtype, backend)
    ids = torch.randint(0, 512, (2, 24), device=backend)
    with torch.no_grad():
        ref = model(ids).logits.double()
    return kernel, model, ids, ref


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", list(FUSE_MODELS))
def test_fuse_decoder_residuals(backend, dtype, name):
    """Each residual add fused with the RMSNorm after it (also across layers): the same logits
    as the unpatched model, every add but the last layer's in `gated_residual_adaln` (2 a layer,
    less layer 0's input norm), the same with transformers' layers kernelized too, and the real
    per-layer hidden states where `output_hidden_states` asks for them (its hooks turn the
    fusion off)."""
    from kernels import Mode, kernelize, use_kernel_mapping

    kernel, model, ids, ref = fuse_setup(name, dtype, backend)
    n_layers = model.config.num_hidden_layers
    with torch.no_grad():
        # on a copy: output_hidden_states leaves transformers' capture hooks on the layers
        ref_hidden = copy.deepcopy(model)(ids, output_hidden_states=True).hidden_states
    assert kernel.integrations.fuse_decoder_residuals(model) == n_layers
    with torch.no_grad():
        out = model(ids).logits.double()
        n = count_ops(lambda: model(ids), "::gated_residual_adaln")
    assert n == 2 * n_layers - 1, f"{n} fused add + norm calls for {n_layers} layers"
    err = ((out - ref).norm() / ref.norm()).item()
    assert err < LOGITS_RTOL[dtype], f"logits relative error {err:.3g}"
    # with the hub layers too: the norms that stay (layer 0's input norm, the final norm, Qwen3's
    # q / k norms) run rms_norm
    with use_kernel_mapping(kernel_mapping(kernel, backend)):
        kernelize(model, mode=Mode.INFERENCE, device=backend)
    with torch.no_grad():
        out = model(ids).logits.double()
        calls = {op: count_ops(lambda: model(ids), op)
                 for op in ("::gated_residual_adaln", "::rms_norm")}
    q_k_norms = 2 * n_layers if name == "qwen3" else 0
    assert calls == {"::gated_residual_adaln": 2 * n_layers - 1, "::rms_norm": 2 + q_k_norms}
    err = ((out - ref).norm() / ref.norm()).item()
    assert err < LOGITS_RTOL[dtype], f"kernelized: logits relative error {err:.3g}"
    # output_hidden_states: every layer's real output, and no fused call
    with torch.no_grad():
        hidden = model(ids, output_hidden_states=True).hidden_states
        n = count_ops(lambda: model(ids, output_hidden_states=True), "::gated_residual_adaln")
    assert n == 0 and len(hidden) == len(ref_hidden) == n_layers + 1
    for h, r in zip(hidden, ref_hidden):
        assert isinstance(h, torch.Tensor)
        err = ((h.double() - r.double()).norm() / r.double().norm()).item()
        assert err < LOGITS_RTOL[dtype], f"hidden states relative error {err:.3g}"


@pytest.mark.slow
def test_fuse_decoder_residuals_compile(backend):
    """torch.compile of the patched layers, each its own graph as benchmark_transformers
    compiles them (fullgraph: the pending (residual, mlp_output) pair passes between graphs),
    gives the eager patched model's logits, and the fused op runs in the compiled graphs."""
    kernel = load_kernel(backend)
    model = tiny_llama(torch.float32, backend)
    ids = torch.randint(0, 512, (2, 24), device=backend)
    with torch.no_grad():
        ref = model(ids).logits.double()
    kernel.integrations.fuse_decoder_residuals(model)
    torch._dynamo.reset()
    for layer in model.model.layers:
        layer.compile(fullgraph=True)
    with torch.no_grad():
        out = model(ids).logits.double()
        n = count_ops(lambda: model(ids), "::gated_residual_adaln")
    torch._dynamo.reset()
    assert n == 2 * model.config.num_hidden_layers - 1
    err = ((out - ref).norm() / ref.norm()).item()
    assert err < LOGITS_RTOL[torch.float32], f"logits relative error {err:.3g}"


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", list(FUSE_MODELS))
def test_fuse_gated_mlp(backend, dtype, name):
    """The MLPs' `silu(gate) * up` in one silu_mul pass: the same logits, one call a layer, no
    SiLU layer left to run; with the residual fusion and kernelize on top, still the same
    logits. A GELU-gated MLP (LLaMA with gelu_pytorch_tanh) is not SiLU-gated: refused."""
    from kernels import Mode, kernelize, use_kernel_mapping

    kernel, model, ids, ref = fuse_setup(name, dtype, backend)
    n_layers = model.config.num_hidden_layers
    assert kernel.integrations.fuse_gated_mlp(model) == n_layers
    with torch.no_grad():
        out = model(ids).logits.double()
        n = count_ops(lambda: model(ids), "::silu_mul")
    assert n == n_layers
    err = ((out - ref).norm() / ref.norm()).item()
    assert err < LOGITS_RTOL[dtype], f"logits relative error {err:.3g}"
    kernel.integrations.fuse_decoder_residuals(model)
    with use_kernel_mapping(kernel_mapping(kernel, backend)):
        kernelize(model, mode=Mode.INFERENCE, device=backend)
    with torch.no_grad():
        out = model(ids).logits.double()
        calls = {op: count_ops(lambda: model(ids), op) for op in ("::silu_mul", "::silu")}
    assert calls == {"::silu_mul": n_layers, "::silu": 0}
    err = ((out - ref).norm() / ref.norm()).item()
    assert err < LOGITS_RTOL[dtype], f"all fused, kernelized: logits relative error {err:.3g}"
    with pytest.raises(ValueError, match="no SiLU-gated"):
        kernel.integrations.fuse_gated_mlp(tiny_llama(dtype, backend, "gelu_pytorch_tanh"))


@pytest.mark.parametrize("fuse", ["fuse_gated_mlp", "fuse_projections", "fuse_decoder_residuals"])
def test_fusions_other_dtype(backend, fuse):
    """A float64 model (a dtype the kernels do not take) runs the modules' own formulas after
    each fusion: the same logits as before it, and no call of the kernels it would use."""
    kernel = load_kernel(backend)
    model = tiny_llama(torch.float64, backend)
    ids = torch.randint(0, model.config.vocab_size, (2, 16), device=backend)
    with torch.no_grad():
        ref = model(ids).logits
    getattr(kernel.integrations, fuse)(model)
    with torch.no_grad():
        out = model(ids).logits
        calls = [count_ops(lambda: model(ids), op)
                 for op in ("::silu_mul", "::silu_and_mul", "::gated_residual_adaln")]
    assert calls == [0, 0, 0]
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)


def tiny_qwen2(dtype, device):
    """Qwen2: q / k / v projections with biases, the sliding window passed from the module."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                      rms_norm_eps=1e-5)
    model = Qwen2ForCausalLM(cfg)
    with torch.no_grad():  # non-zero biases, so that fusing them is tested
        for m in model.modules():
            if isinstance(m, torch.nn.Linear) and m.bias is not None:
                m.bias.normal_(0, 0.5)
    return _init(model, dtype, device)


# model -> builder, for fuse_projections: each of the four attention forwards it knows
PROJ_MODELS = {**FUSE_MODELS, "qwen2": tiny_qwen2}


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", list(PROJ_MODELS))
def test_fuse_projections(backend, dtype, name):
    """q / k / v in one matrix product and gate / up in another: the same logits, three linears
    a layer fewer, the weights held once (the parameter count unchanged), silu_and_mul once a
    layer; again the same logits with fuse_decoder_residuals, fuse_gated_mlp (which counts the
    fused MLPs as its own) and kernelize on top, and compiled layer by layer (fullgraph).
    Fusing twice changes nothing."""
    from kernels import Mode, kernelize, use_kernel_mapping

    kernel = load_kernel(backend)
    model = PROJ_MODELS[name](dtype, backend)
    ids = torch.randint(0, 512, (2, 24), device=backend)
    n_layers = model.config.num_hidden_layers
    n_params = sum(p.numel() for p in model.parameters())

    def logits():
        with torch.no_grad():
            return model(ids).logits.double()

    ref = logits()
    n_linear = count_ops(lambda: logits(), "aten::linear")
    fi = kernel.integrations
    assert fi.fuse_projections(model) == 2 * n_layers
    assert fi.fuse_projections(model) == 2 * n_layers
    layer = model.model.layers[0]
    assert not hasattr(layer.self_attn, "q_proj") and not hasattr(layer.mlp, "up_proj")
    assert sum(p.numel() for p in model.parameters()) == n_params
    assert count_ops(lambda: logits(), "aten::linear") == n_linear - 3 * n_layers
    assert count_ops(lambda: logits(), "::silu_and_mul") == n_layers

    def check(what):
        err = ((logits() - ref).norm() / ref.norm()).item()
        assert err < LOGITS_RTOL[dtype], f"{what}: logits relative error {err:.3g}"

    check("fused projections")
    fi.fuse_decoder_residuals(model)
    assert fi.fuse_gated_mlp(model) == n_layers
    with use_kernel_mapping(kernel_mapping(kernel, backend)):
        kernelize(model, mode=Mode.INFERENCE, device=backend)
    check("with the residual fusion, kernelized")
    torch._dynamo.reset()
    for layer in model.model.layers:
        layer.compile(fullgraph=True)
    check("compiled per layer")
    torch._dynamo.reset()


def test_fuse_projections_refuses(backend):
    """What fuse_projections cannot fuse is left alone with the reason: a model without those
    attentions and MLPs (Falcon), projections wrapped by a hook; a GELU-gated MLP keeps its
    projections while the attention is fused."""
    kernel = load_kernel(backend)
    fi = kernel.integrations
    with pytest.raises(ValueError, match="no LLaMA-style attention"):
        fi.fuse_projections(tiny_falcon(torch.float32, backend, new_decoder_architecture=False))
    model = tiny_llama(torch.float32, backend)
    for layer in model.model.layers:
        layer.self_attn.k_proj.register_forward_hook(lambda *a: None)
    with pytest.raises(ValueError, match="wrapped"):
        fi.fuse_projections(model, mlp=False)
    model = tiny_llama(torch.float32, backend, "gelu_pytorch_tanh")
    assert fi.fuse_projections(model) == model.config.num_hidden_layers
    assert hasattr(model.model.layers[0].mlp, "gate_proj")


def test_fuse_decoder_residuals_refuses(backend):
    """A model without LLaMA's decoder layer (Falcon) is refused with the reason, not patched
    with code that computes something else."""
    kernel = load_kernel(backend)
    model = tiny_falcon(torch.float32, backend, new_decoder_architecture=False)
    with pytest.raises(ValueError, match="no LLaMA-style decoder stack"):
        kernel.integrations.fuse_decoder_residuals(model)
