"""Real models beyond the zoo (workloads/model_zoo.py), at a tiny size
only, for the CPU tests: architectures whose graphs hold ops the zoo's
do not. transformers' Qwen2-MoE (top-k expert routing: topk, sort, histc,
grouped GEMMs), DeBERTa-v2 (disentangled attention: relative-position
gathers), GPT-J (partial rotary embeddings, repeat); torchvision's Swin-T
(shifted windows: roll, pad, window reshapes) and EfficientNetV2-S
(squeeze-and-excitation, depthwise convolutions, SiLU); timm's LeViT
(attention biases looked up by index). Stochastic depth and dropout are
off, so that compiled and eager steps compare value for value.

model_zoo.build finds these names too; the benchmarks run the zoo's own."""

import torch

from .model_zoo import _SPECIAL_TOKENS, _images, _tokens

_VOCAB = 1000
_TINY_DECODER = dict(
    vocab_size=_VOCAB,
    hidden_size=64,
    num_hidden_layers=2,
    intermediate_size=128,
    num_attention_heads=4,
    **_SPECIAL_TOKENS,
)


def _without_random_drops(model):
    import torchvision

    for module in model.modules():
        if isinstance(module, torchvision.ops.StochasticDepth):
            module.p = 0.0
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    return model


def qwen2_moe(size):
    import transformers

    config = transformers.Qwen2MoeConfig(
        num_key_value_heads=4,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        shared_expert_intermediate_size=64,
        use_cache=False,
        **_TINY_DECODER,
    )
    return transformers.Qwen2MoeForCausalLM(config), _tokens(_VOCAB, 2, 16)


def deberta(size):
    import transformers

    config = transformers.DebertaV2Config(
        max_position_embeddings=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        **_TINY_DECODER,
    )
    return transformers.DebertaV2ForMaskedLM(config), _tokens(_VOCAB, 2, 16)


def gptj(size):
    import transformers

    config = transformers.GPTJConfig(
        vocab_size=_VOCAB,
        n_embd=64,
        n_layer=2,
        n_head=4,
        rotary_dim=8,
        n_positions=64,
        **_SPECIAL_TOKENS,
    )
    return transformers.GPTJForCausalLM(config), _tokens(_VOCAB, 2, 16)


def swin(size):
    import torchvision

    return _without_random_drops(torchvision.models.swin_t(num_classes=10)), _images(2, 64, "x")


def efficientnet_v2(size):
    import torchvision

    model = torchvision.models.efficientnet_v2_s(num_classes=10)
    return _without_random_drops(model), _images(2, 64, "x")


def levit(size):
    import timm

    model = timm.create_model("levit_128s", pretrained=False, num_classes=10, img_size=64)
    return model, _images(2, 64, "x")


BUILDERS = {
    "qwen2_moe": qwen2_moe,
    "deberta": deberta,
    "gptj": gptj,
    "swin": swin,
    "efficientnet_v2": efficientnet_v2,
    "levit": levit,
}
