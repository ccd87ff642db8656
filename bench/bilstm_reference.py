"""PyTorch reference for rumedbench's BiLSTM baseline (upstream sb-ai-lab/MedBench code/bilstm, its settings
restated in docs/baselines.md; written here, not copied).

Two uses:
  check   reads one JSON object on stdin (a tiny network's config and weights, a token batch, targets) and prints
          PyTorch's logits, loss, gradients and the weights after one optimiser step: src/ml/bilstm-net.test.ts
          compares ours with them (to 1e-5).
  train   trains upstream's classifier (RuMedTop3, RuMedSymptomRec, RuMedDaNet, RuMedNLI) or its token tagger
          (RuMedNER) on one task of the data folder, for the bench (bench/bilstm.bench.js) and the faithfulness
          matrix (bench/bilstm-faithful.sh), printing one JSON line per epoch (seconds, CPU seconds, train and dev
          loss) and the peak RSS at the end.

python3 bench/bilstm_reference.py train DATA_DIR TASK [--limit N] [--epochs E] [--threads 2] [--seed 0]
                                    [--predict FILE] [--lower 1]
--predict writes the last epoch's test predictions to FILE (one {id field, "prediction"} line per test record, the
format `rumedbench eval` scores; RuMedNER's prediction is the list of tags, one per given token):
bench/bilstm-faithful.sh scores them beside ours. --limit cuts the train and dev splits (never the test split).
--lower 1 (RuMedNER only) lower-cases the tokens as upstream's torchtext Field(lower=True) does; the default keeps
them as given, as the issue's recipe and `rumedbench baseline bilstm` do.
"""
import json
import re
import resource
import sys
import time

import torch
from torch import nn


class Net(nn.Module):
    """Upstream's shapes: embeddings, a bidirectional nn.LSTM (batch first), a linear head over h_n[0] and h_n[1]
    (classifiers) or over every step's output (the tagger), with the tagger's dropouts."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        pad = cfg.get("paddingIdx")
        self.embedding = nn.Embedding(cfg["vocab"], cfg["embedding"], padding_idx=pad)
        drop = cfg.get("dropout") or {}
        self.lstm = nn.LSTM(
            cfg["embedding"],
            cfg["hidden"],
            num_layers=cfg["torchLayers"],
            bidirectional=True,
            batch_first=True,
            dropout=drop.get("between", 0.0) if cfg["torchLayers"] > 1 else 0.0,
        )
        self.emb_drop = nn.Dropout(drop.get("embedding", 0.0))
        self.out_drop = nn.Dropout(drop.get("output", 0.0))
        self.head = nn.Linear(2 * cfg["hidden"], cfg["outputs"])

    def forward(self, tokens):
        out, (h_n, _) = self.lstm(self.emb_drop(self.embedding(tokens)))
        if self.cfg["head"] == "final-states":
            return self.head(self.out_drop(torch.cat([h_n[0], h_n[1]], dim=1)))
        return self.head(self.out_drop(out))


def torch_name(name):
    return {"embedding": "embedding.weight", "head.weight": "head.weight", "head.bias": "head.bias"}.get(name, name)


def check():
    req = json.load(sys.stdin)
    torch.manual_seed(0)
    cfg = req["config"]
    net = Net(cfg)
    params = dict(net.named_parameters())
    with torch.no_grad():
        for name, values in req["weights"].items():
            p = params[torch_name(name)]
            p.copy_(torch.tensor(values, dtype=torch.float32).reshape(p.shape))
    net.eval()
    b, t = req["batch"], req["steps"]
    tokens = torch.tensor(req["tokens"], dtype=torch.long).reshape(b, t)
    logits = net(tokens)
    targets = torch.tensor(req["targets"], dtype=torch.long)
    if cfg["head"] == "per-token":
        # ours: time-major rows (t·B + b); PyTorch's batch-first output made to match.
        logits = logits.transpose(0, 1).reshape(-1, cfg["outputs"])
    loss = nn.functional.cross_entropy(logits, targets, ignore_index=-1)
    loss.backward()
    opt = req["optimiser"]
    if opt.get("weightDecay"):
        optim = torch.optim.AdamW(net.parameters(), lr=opt["lr"], weight_decay=opt["weightDecay"])
    else:
        optim = torch.optim.Adam(net.parameters(), lr=opt["lr"])
    grads = {n: params[torch_name(n)].grad.reshape(-1).tolist() for n in req["weights"]}
    optim.step()
    stepped = {n: params[torch_name(n)].detach().reshape(-1).tolist() for n in req["weights"]}
    json.dump(
        {
            "torch": torch.__version__,
            "logits": logits.detach().reshape(-1).tolist(),
            "loss": loss.item(),
            "grads": grads,
            "stepped": stepped,
        },
        sys.stdout,
    )


# --- train: upstream's classifier recipe on one task ---------------------------------------------------------------

PUNCT = re.compile(r"^[\W_]+$")
# A tokenizer in the spirit of nltk's ToktokTokenizer for what matters here: words and numbers kept whole,
# punctuation split off (and then dropped, as upstream drops punctuation tokens). The same rule as
# src/baselines/bilstm.ts, so that both sides see the same vocabulary.
TOKEN = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*|[^\w\s]|_", re.UNICODE)


def tokenize(text):
    return [w for w in TOKEN.findall(text.lower()) if not PUNCT.match(w)]


# Input fields, gold field, id field, and whether the answer is a Top-3 ranking.
TASKS = {
    "RuMedTop3": (["symptoms"], "code", "idx", True),
    "RuMedSymptomRec": (["symptoms"], "code", "idx", True),
    "RuMedDaNet": (["context", "question"], "answer", "pairID", False),
    "RuMedNLI": (["ru_sentence1", "ru_sentence2"], "gold_label", "pairID", False),
}


def read(path, limit=None):
    rows = []
    with open(path, encoding="utf8") as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
            if limit and len(rows) >= limit:
                break
    return rows


def encode(rows, fields, vocab, seq_len):
    out = []
    for r in rows:
        if len(fields) == 1:
            toks = tokenize(r[fields[0]])[:seq_len]
        else:
            first = int(seq_len * 0.75)
            toks = tokenize(r[fields[0]])[:first] + tokenize(r[fields[1]])[: seq_len - first]
        ids = [vocab.get(w, 1) for w in toks]
        out.append(ids + [0] * (seq_len - len(ids)))
    return torch.tensor(out, dtype=torch.long)


def train(argv):
    data, task = argv[0], argv[1]
    opts = dict(zip(argv[2::2], argv[3::2]))
    limit = int(opts.get("--limit", 0)) or None
    epochs = int(opts.get("--epochs", 50))
    torch.set_num_threads(int(opts.get("--threads", 2)))
    torch.manual_seed(int(opts.get("--seed", 0)))
    fields, gold, idf, top3 = TASKS[task]
    seq_len = 256 if len(fields) > 1 else 128
    tr = read(f"{data}/{task}/train_v1.jsonl", limit)
    dev = read(f"{data}/{task}/dev_v1.jsonl", limit)
    vocab = {"PAD": 0, "UNK": 1}
    for r in tr:
        for f in fields:
            for w in tokenize(r[f]):
                vocab.setdefault(w, len(vocab))
    labels = sorted({r[gold] for r in tr})
    lid = {l: i for i, l in enumerate(labels)}
    xtr, xdev = encode(tr, fields, vocab, seq_len), encode(dev, fields, vocab, seq_len)
    ytr = torch.tensor([lid[r[gold]] for r in tr])
    ydev = torch.tensor([lid.get(r[gold], 0) for r in dev])
    cfg = {"vocab": len(vocab), "embedding": 300, "hidden": 256, "torchLayers": 2, "outputs": len(labels), "head": "final-states"}
    net = Net(cfg)
    optim = torch.optim.Adam(net.parameters(), lr=1e-3)
    lossf = nn.CrossEntropyLoss()
    best, bad = float("inf"), 0
    for epoch in range(1, epochs + 1):
        t0, c0 = time.time(), time.process_time()
        net.train()
        total = 0.0
        for i in range(0, len(xtr), 64):
            optim.zero_grad()
            loss = lossf(net(xtr[i : i + 64]), ytr[i : i + 64])
            loss.backward()
            optim.step()
            total += loss.item() * len(xtr[i : i + 64])
        net.eval()
        with torch.no_grad():
            dl = sum(lossf(net(xdev[i : i + 64]), ydev[i : i + 64]).item() * len(xdev[i : i + 64]) for i in range(0, len(xdev), 64))
        dev_loss = dl / len(xdev)
        print(json.dumps({"epoch": epoch, "seconds": time.time() - t0, "cpu_seconds": time.process_time() - c0, "train_loss": total / len(xtr), "dev_loss": dev_loss}), flush=True)
        if dev_loss < best:
            best = dev_loss
        else:
            bad += 1  # upstream's counter: never reset
            if bad >= 3:
                break
    if "--predict" in opts:
        test = read(f"{data}/{task}/test_v1.jsonl")
        xte = encode(test, fields, vocab, seq_len)
        with torch.no_grad():
            logits = torch.cat([net(xte[i : i + 64]) for i in range(0, len(xte), 64)])
        with open(opts["--predict"], "w", encoding="utf8") as f:
            for r, z in zip(test, logits):
                order = torch.argsort(z, descending=True).tolist()
                answer = [labels[k] for k in order[:3]] if top3 else labels[order[0]]
                f.write(json.dumps({idf: r[idf], "prediction": answer}, ensure_ascii=False) + "\n")
    print(json.dumps({"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "epochs": epoch, "vocab": len(vocab)}))


# --- train RuMedNER: upstream's tagger recipe (code/bilstm/token_classifier.py's settings) -------------------------


def train_tagger(argv):
    data, task = argv[0], argv[1]
    opts = dict(zip(argv[2::2], argv[3::2]))
    limit = int(opts.get("--limit", 0)) or None
    epochs = int(opts.get("--epochs", 20))
    lower = opts.get("--lower", "0") == "1"
    torch.set_num_threads(int(opts.get("--threads", 2)))
    torch.manual_seed(int(opts.get("--seed", 0)))
    words = (lambda ts: [t.lower() for t in ts]) if lower else (lambda ts: list(ts))
    tr = read(f"{data}/{task}/train_v1.jsonl", limit)
    dev = read(f"{data}/{task}/dev_v1.jsonl", limit)
    # Every training token (frequency >= 1); PAD 0 (its embedding row zero and never trained), UNK 1, as ours.
    vocab = {"PAD": 0, "UNK": 1}
    for r in tr:
        for w in words(r["tokens"]):
            vocab.setdefault(w, len(vocab))
    tags = sorted({t for r in tr for t in r["ner_tags"]})
    tid = {t: i for i, t in enumerate(tags)}

    def batches(rows):
        # File order, each batch padded at the end to its longest sentence (ours; upstream's legacy torchtext
        # BucketIterator pools and shuffles by length, which its version decides); padding targets -1, ignored.
        for i in range(0, len(rows), 32):
            part = rows[i : i + 32]
            steps = max(1, max(len(r["tokens"]) for r in part))
            x = torch.zeros(len(part), steps, dtype=torch.long)
            y = torch.full((len(part), steps), -1, dtype=torch.long)
            for b, r in enumerate(part):
                ids = [vocab.get(w, 1) for w in words(r["tokens"])]
                x[b, : len(ids)] = torch.tensor(ids, dtype=torch.long)
                y[b, : len(ids)] = torch.tensor([tid.get(t, -1) for t in r["ner_tags"]], dtype=torch.long)
            yield x, y

    cfg = {
        "vocab": len(vocab),
        "embedding": 300,
        "hidden": 256,
        "torchLayers": 2,
        "outputs": len(tags),
        "head": "per-token",
        "paddingIdx": 0,
        "dropout": {"embedding": 0.5, "between": 0.1, "output": 0.25},
    }
    net = Net(cfg)
    with torch.no_grad():
        for p in net.parameters():
            nn.init.normal_(p, mean=0.0, std=0.1)
        net.embedding.weight[0].zero_()
    optim = torch.optim.AdamW(net.parameters(), lr=0.0015, weight_decay=0.01)
    # Summed over tokens and divided by the tokens: the per-token mean over the split, as ours reports it
    # (upstream prints the mean of its batches' means).
    lossf = nn.CrossEntropyLoss(ignore_index=-1, reduction="sum")
    for epoch in range(1, epochs + 1):
        t0, c0 = time.time(), time.process_time()
        net.train()
        total, count = 0.0, 0
        for x, y in batches(tr):
            n = int((y >= 0).sum())
            if n == 0:
                continue
            optim.zero_grad()
            loss = lossf(net(x).reshape(-1, len(tags)), y.reshape(-1))
            (loss / n).backward()
            optim.step()
            total += loss.item()
            count += n
        net.eval()
        dl, dn = 0.0, 0
        with torch.no_grad():
            for x, y in batches(dev):
                dl += lossf(net(x).reshape(-1, len(tags)), y.reshape(-1)).item()
                dn += int((y >= 0).sum())
        line = {"epoch": epoch, "seconds": time.time() - t0, "cpu_seconds": time.process_time() - c0}
        line.update({"train_loss": total / max(count, 1), "dev_loss": dl / dn if dn else None})
        print(json.dumps(line), flush=True)
    if "--predict" in opts:
        test = read(f"{data}/{task}/test_v1.jsonl")
        with torch.no_grad(), open(opts["--predict"], "w", encoding="utf8") as f:
            for r in test:
                # One sentence at a time, unpadded, as upstream's infer() predicts.
                ids = torch.tensor([[vocab.get(w, 1) for w in words(r["tokens"])]], dtype=torch.long)
                best = net(ids)[0].argmax(-1).tolist() if ids.shape[1] > 0 else []
                answer = [tags[k] for k in best]
                f.write(json.dumps({"idx": r["idx"], "prediction": answer}, ensure_ascii=False) + "\n")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_rss_mb": rss, "epochs": epochs, "vocab": len(vocab)}))


if __name__ == "__main__":
    if sys.argv[1] == "check":
        check()
    elif sys.argv[1] == "train" and len(sys.argv) > 3 and sys.argv[3] == "RuMedNER":
        train_tagger(sys.argv[2:])
    elif sys.argv[1] == "train":
        train(sys.argv[2:])
    else:
        sys.exit(f"unknown mode {sys.argv[1]}: check or train")
