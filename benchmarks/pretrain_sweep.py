"""Pretraining sweep: train tiny-VLM variants for a fixed wall-clock on the same cached demonstrations.

    python benchmarks/pretrain_sweep.py data   --cache /tmp/sweep/data16.pt --image-tokens 16 --episodes 40
    python benchmarks/pretrain_sweep.py train  --cache /tmp/sweep/data16.pt --minutes 10 --hidden 128 --layers 4 \
        --lr 2e-3 --batch 16 --threads 2 --json /tmp/sweep/h128.json [--episodes-eval]

`data` makes the tokenizer, the demonstrations (pretrain seed space, seen apps) and the
held-out decisions once and saves the prepared examples; `train` builds a model of the given
size on that tokenizer and trains it for --minutes, logging loss, held-out per-step exact match
every --eval-minutes, and (with --episodes-eval) the success of validation episodes at the end.
The numbers in docs/pretraining.md come from this script.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import time
from dataclasses import replace
from pathlib import Path

import torch

from coadapt.demos import DemoConfig, DemoStats, corpus_texts, demo_instances, iter_demos
from coadapt.policy.model import VLMPolicy
from coadapt.policy.prompt import PromptConfig
from coadapt.policy.tiny import TINY_POLICY_CONFIG, TinyVLMConfig, build_model, build_processor, build_tokenizer, count_parameters
from coadapt.pretrain import (
    PixelCodec, _lr_at, _optimizer, batch_order, collate_examples, exact_match, play_episodes, prepare_example,
    summarize_episodes, PretrainConfig,
)


def _prompt(args: argparse.Namespace) -> PromptConfig:
    fields = {}
    if getattr(args, "no_indices", False):
        fields["show_indices"] = False
    return replace(TINY_POLICY_CONFIG.prompt, **fields)


def make_data(args: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    prompt = _prompt(args)
    demos = DemoConfig(episodes_per_task=args.episodes, seed=args.seed, popup_share=args.popup_share,
                       detour_share=args.detour_share)
    corpus = list(corpus_texts(demos, 4, prompt))
    tokenizer = build_tokenizer(corpus, vocab_size=args.vocab)
    model_cfg = TinyVLMConfig(image_tokens=args.image_tokens, min_image_tokens=min(4, args.image_tokens), vocab_size=args.vocab)
    policy = VLMPolicy(build_model(model_cfg, tokenizer), build_processor(tokenizer, model_cfg),
                       replace(TINY_POLICY_CONFIG, prompt=prompt))
    codec = PixelCodec(policy.processor.image_processor)
    stats = DemoStats()
    train = [prepare_example(policy, codec, s) for s in iter_demos(demos, stats, "train")]
    val = [prepare_example(policy, codec, s) for s in iter_demos(replace(demos, episodes_per_task=1), None, "val")]
    random.Random(0).shuffle(val)
    Path(args.cache).parent.mkdir(parents=True, exist_ok=True)
    tok_dir = Path(args.cache).with_suffix(".tokenizer")
    tokenizer.save_pretrained(tok_dir)
    torch.save({"train": train, "val": val[:600], "stats": stats.to_dict(), "image_tokens": args.image_tokens,
                "vocab": args.vocab, "prompt": prompt, "demos": demos, "seconds": time.perf_counter() - t0}, args.cache)
    lengths = sorted(e.length for e in train)
    print(json.dumps({"train": len(train), "val": len(val), "stats": stats.to_dict(), "seconds": time.perf_counter() - t0,
                      "mean_len": sum(lengths) / len(lengths), "p90_len": lengths[int(0.9 * len(lengths))]}))


def train(args: argparse.Namespace) -> None:
    from transformers.models.qwen2.tokenization_qwen2 import Qwen2Tokenizer

    torch.set_num_threads(args.threads)
    data = torch.load(args.cache, weights_only=False)
    tokenizer = Qwen2Tokenizer.from_pretrained(Path(args.cache).with_suffix(".tokenizer"))
    model_cfg = TinyVLMConfig(hidden_size=args.hidden, num_layers=args.layers, num_heads=args.heads,
                              num_kv_heads=args.kv_heads, intermediate_size=args.mlp or 2 * args.hidden,
                              vision_hidden_size=args.vision_hidden, image_tokens=data["image_tokens"],
                              min_image_tokens=min(4, data["image_tokens"]), vocab_size=data["vocab"])
    policy = VLMPolicy(build_model(model_cfg, tokenizer), build_processor(tokenizer, model_cfg),
                       replace(TINY_POLICY_CONFIG, prompt=data["prompt"]))
    codec = PixelCodec(policy.processor.image_processor)
    examples, val = data["train"], data["val"]
    est_steps = args.est_steps
    cfg = PretrainConfig(steps=est_steps, lr=args.lr, warmup_steps=args.warmup, batch_size=args.batch,
                         min_lr_ratio=args.min_lr_ratio)
    opt = _optimizer(policy.model, cfg)
    policy.model.train()
    log = {"args": vars(args), "params": count_parameters(policy.model), "curve": []}
    print(f"params {log['params']}, {len(examples)} examples", flush=True)
    step, t_train, epoch, batches = 0, 0.0, -1, []
    spe = len(batch_order(examples, args.batch, 64, 0, 0))
    next_eval = args.eval_minutes * 60
    loss_acc = 0.0
    while t_train < args.minutes * 60 and step < est_steps:
        e, k = divmod(step, spe)
        if e != epoch:
            epoch, batches = e, batch_order(examples, args.batch, 64, 0, e)
        t0 = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = _lr_at(cfg, step)
        loss = policy.batch_loss(collate_examples(policy, codec, [examples[i] for i in batches[k]]))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.model.parameters(), 1.0)
        opt.step()
        t_train += time.perf_counter() - t0
        step += 1
        loss_acc += loss.item()
        if t_train >= next_eval or t_train >= args.minutes * 60 or step == est_steps:
            em = exact_match(policy, codec, val[: args.val_n], 16)
            row = {"step": step, "minutes": round(t_train / 60, 2), "train_loss": round(loss_acc / max(1, step), 4),
                   "val_loss": round(em["loss"], 4), "exact_match": round(em["exact_match"], 4), "by_source": em["by_source"]}
            log["curve"].append(row)
            print(json.dumps(row), flush=True)
            next_eval += args.eval_minutes * 60
    if args.episodes_eval:
        tasks = demo_instances(data["demos"].seed, 1, (), "val")
        t0 = time.perf_counter()
        eps = play_episodes(policy, tasks, 16)
        summ = summarize_episodes(eps)
        summ["seconds"] = time.perf_counter() - t0
        summ["failed"] = sorted(e["task"] for e in eps if e["success"] < 1)
        log["episodes"] = summ
        print(json.dumps(summ), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(log, indent=1))
    if args.save:
        policy.save(args.save)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("data")
    d.add_argument("--cache", required=True)
    d.add_argument("--image-tokens", type=int, default=16)
    d.add_argument("--vocab", type=int, default=2048)
    d.add_argument("--episodes", type=int, default=40)
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--popup-share", type=float, default=0.15)
    d.add_argument("--detour-share", type=float, default=0.3)
    d.add_argument("--no-indices", action="store_true", help="element lines without [i] (PromptConfig.show_indices)")
    t = sub.add_parser("train")
    t.add_argument("--cache", required=True)
    t.add_argument("--minutes", type=float, default=10)
    t.add_argument("--eval-minutes", type=float, default=2)
    t.add_argument("--est-steps", type=int, default=3000, help="length of the lr schedule, in steps")
    t.add_argument("--hidden", type=int, default=128)
    t.add_argument("--layers", type=int, default=4)
    t.add_argument("--heads", type=int, default=4)
    t.add_argument("--kv-heads", type=int, default=2)
    t.add_argument("--mlp", type=int, default=0)
    t.add_argument("--vision-hidden", type=int, default=64)
    t.add_argument("--lr", type=float, default=2e-3)
    t.add_argument("--min-lr-ratio", type=float, default=0.05)
    t.add_argument("--warmup", type=int, default=200)
    t.add_argument("--batch", type=int, default=16)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--val-n", type=int, default=400)
    t.add_argument("--episodes-eval", action="store_true")
    t.add_argument("--json")
    t.add_argument("--save")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    {"data": make_data, "train": train}[args.cmd](args)


if __name__ == "__main__":
    main()
