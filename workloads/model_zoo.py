"""A zoo of real model code for the torch.compile backend: Hugging Face
`transformers` decoders, encoders and a ViT, `torchvision`'s ResNets and
`timm`'s ConvNeXt and ViT, built from configs with random weights (nothing
is downloaded).

Each entry builds a model at two sizes: `tiny` (CPU tests, seconds each)
and `small` (GPU tests: realistic widths, few layers) or `bench`
(benchmarks: the sizes people train at, few layers). `ZooModel.batch(device)`
gives the model's keyword inputs, with labels where the model computes its
own loss, and `ZooModel.loss(output)` reduces an output to the scalar a
training step differentiates.

Dropout probabilities are zero so that compiled and eager steps can be
compared value for value, unless `build` is given one."""

from dataclasses import dataclass
from typing import Callable

import torch

SIZES = ("tiny", "small", "bench")


@dataclass
class ZooModel:
    name: str
    model: torch.nn.Module
    make_batch: Callable[[str], dict]

    def batch(self, device):
        return self.make_batch(device)

    @staticmethod
    def loss(output):
        """The scalar a training step differentiates: the model's own loss
        when it computes one (language models given labels), else the mean
        square of its logits."""
        if hasattr(output, "loss") and output.loss is not None:
            return output.loss
        logits = output.logits if hasattr(output, "logits") else output
        return logits.float().square().mean()

    @staticmethod
    def logits(output):
        return output.logits if hasattr(output, "logits") else output

    def bench_batch(self, device, dtype, training):
        """Moves the model to `device` and `dtype` in training or eval mode;
        returns its batch with floating inputs in `dtype`."""
        self.model.to(device, dtype).train(training)
        return {
            k: v.to(dtype) if v.is_floating_point() else v for k, v in self.batch(device).items()
        }

    def step(self, compiled, batch, training):
        """A function running one step of `compiled` (this model, compiled
        or not) on `batch`: forward with the loss under no_grad, or forward
        and backward with the gradients reset first. It returns the loss."""
        params = [p for p in self.model.parameters() if p.requires_grad]

        def inference():
            with torch.no_grad():
                return self.loss(compiled(**batch))

        def train():
            for p in params:
                p.grad = None
            loss = self.loss(compiled(**batch))
            loss.backward()
            return loss

        return train if training else inference


def _tokens(vocab, batch, seq, labels=True):
    def make(device):
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(0, vocab, (batch, seq), generator=g).to(device)
        return {"input_ids": ids, "labels": ids} if labels else {"input_ids": ids}

    return make


def _images(batch, side, key="pixel_values"):
    def make(device):
        g = torch.Generator().manual_seed(0)
        return {key: torch.randn(batch, 3, side, side, generator=g).to(device)}

    return make


# Token ids inside every vocabulary (the configs' defaults name ids of
# the full-size vocabularies).
_SPECIAL_TOKENS = dict(bos_token_id=1, eos_token_id=2, pad_token_id=0)

# Per size: (vocab, width, intermediate, heads, kv heads, layers, batch, seq)
_DECODER_SIZES = {
    "tiny": (1000, 128, 256, 4, 2, 1, 2, 16),
    "small": (32000, 1024, 2816, 16, 4, 2, 2, 512),
    "bench": (32000, 2048, 5632, 16, 4, 2, 4, 2048),
}


def _decoder(config_class, size, vocab_size=None, **extra):
    import transformers

    vocab, width, hidden, heads, kv_heads, layers, batch, seq = _DECODER_SIZES[size]
    vocab = vocab_size or vocab
    config = config_class(
        vocab_size=vocab,
        hidden_size=width,
        intermediate_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=max(seq, 64),
        attention_dropout=0.0,
        use_cache=False,
        **_SPECIAL_TOKENS,
        **extra,
    )
    model = transformers.AutoModelForCausalLM.from_config(config)
    return model, _tokens(vocab, batch, seq)


def llama(size, vocab_size=None):
    """A transformers Llama at `size`; `vocab_size` replaces the size's
    vocabulary (Llama 3's is 128256)."""
    import transformers

    return _decoder(transformers.LlamaConfig, size, vocab_size=vocab_size)


def mistral(size):
    import transformers

    return _decoder(transformers.MistralConfig, size)


def qwen2(size):
    import transformers

    return _decoder(transformers.Qwen2Config, size)


def gemma(size):
    import transformers

    width = _DECODER_SIZES[size][1]
    return _decoder(transformers.GemmaConfig, size, head_dim=width // _DECODER_SIZES[size][3])


def phi3(size):
    import transformers

    return _decoder(transformers.Phi3Config, size, resid_pdrop=0.0, embd_pdrop=0.0)


_GPT2_SIZES = {  # vocab, width, heads, layers, batch, seq
    "tiny": (1000, 64, 4, 2, 2, 16),
    "small": (50257, 768, 12, 2, 2, 512),
    "bench": (50257, 768, 12, 2, 8, 1024),
}


def gpt2(size):
    import transformers

    vocab, width, heads, layers, batch, seq = _GPT2_SIZES[size]
    config = transformers.GPT2Config(
        vocab_size=vocab,
        n_positions=max(seq, 64),
        n_embd=width,
        n_layer=layers,
        n_head=heads,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        use_cache=False,
        **_SPECIAL_TOKENS,
    )
    return transformers.GPT2LMHeadModel(config), _tokens(vocab, batch, seq)


_BERT_SIZES = {  # vocab, width, heads, layers, batch, seq
    "tiny": (1000, 64, 4, 2, 2, 16),
    "small": (30522, 768, 12, 2, 4, 128),
    "bench": (30522, 768, 12, 2, 16, 512),
}


def bert(size):
    import transformers

    vocab, width, heads, layers, batch, seq = _BERT_SIZES[size]
    config = transformers.BertConfig(
        vocab_size=vocab,
        hidden_size=width,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * width,
        max_position_embeddings=max(seq, 64),
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return transformers.BertForMaskedLM(config), _tokens(vocab, batch, seq)


def t5(size):
    import transformers

    vocab, width, heads, layers, batch, seq = _BERT_SIZES[size]
    config = transformers.T5Config(
        vocab_size=vocab,
        d_model=width,
        d_kv=width // heads,
        d_ff=4 * width,
        num_layers=layers,
        num_heads=heads,
        dropout_rate=0.0,
        use_cache=False,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
    )
    return transformers.T5ForConditionalGeneration(config), _tokens(vocab, batch, seq)


_VIT_SIZES = {  # image side, patch, width, heads, layers, batch
    "tiny": (32, 8, 64, 4, 2, 2),
    "small": (224, 16, 768, 12, 2, 8),
    "bench": (224, 16, 768, 12, 4, 64),
}


def vit(size):
    import transformers

    side, patch, width, heads, layers, batch = _VIT_SIZES[size]
    config = transformers.ViTConfig(
        image_size=side,
        patch_size=patch,
        hidden_size=width,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * width,
        num_labels=10,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return transformers.ViTForImageClassification(config), _images(batch, side)


def timm_vit(size):
    import timm

    side, patch, width, heads, layers, batch = _VIT_SIZES[size]
    model = timm.create_model(
        "vit_base_patch16_224",
        pretrained=False,
        img_size=side,
        patch_size=patch,
        embed_dim=width,
        depth=layers,
        num_heads=heads,
        num_classes=10,
    )
    return model, _images(batch, side, key="x")


# batch, side: batch norm's last layers then still normalize over 16
# values a channel (over 2, as at batch 2 and 32², the statistics amplify
# rounding differences a hundredfold).
_CNN_SIZES = {"tiny": (4, 64), "small": (8, 224), "bench": (64, 224)}


def resnet(size):
    import torchvision

    batch, side = _CNN_SIZES[size]
    build = torchvision.models.resnet18 if size == "tiny" else torchvision.models.resnet50
    return build(weights=None, num_classes=10), _images(batch, side, key="x")


def convnext(size):
    import timm

    batch, side = _CNN_SIZES[size]
    if size == "tiny":
        shape = dict(depths=(1, 1, 2, 1), dims=(16, 32, 64, 128))
    else:
        shape = {}
    model = timm.create_model("convnext_tiny", pretrained=False, num_classes=10, **shape)
    return model, _images(batch, side, key="x")


BUILDERS = {
    "gpt2": gpt2,
    "llama": llama,
    "mistral": mistral,
    "qwen2": qwen2,
    "gemma": gemma,
    "phi3": phi3,
    "bert": bert,
    "t5": t5,
    "vit": vit,
    "timm_vit": timm_vit,
    "resnet": resnet,
    "convnext": convnext,
}


def build(name, size="tiny", seed=0, dropout=0.0):
    """The zoo model `name` at `size` (see SIZES; a wider_zoo model at
    its one size), with weights drawn from
    torch's generator seeded with `seed`; `dropout` sets the probability of
    every nn.Dropout module (zero by default, so that compiled and eager
    steps compare value for value)."""
    torch.manual_seed(seed)
    if name in BUILDERS:
        model, make_batch = BUILDERS[name](size)
    else:
        from .wider_zoo import BUILDERS as WIDER  # tiny CPU-test models

        model, make_batch = WIDER[name](size)
    if dropout:
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = dropout
    return ZooModel(name, model, make_batch)
