"""A model file for `nova compile` (docs/cli.md): Hugging Face GPT-2 small
(124M parameters, random weights, nothing downloaded) from 1 x 1024 token ids.

    nova compile benchmarks/gpt2_small_model.py -o gpt2.novaprog
    nova profile gpt2.novaprog --random --timing-only --by module --top 15
"""
import torch


def get_model():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config()).eval()  # n_embd 768, 12 layers, 12 heads
    ids = torch.randint(0, model.config.vocab_size, (1, 1024))
    return model, (ids,)
