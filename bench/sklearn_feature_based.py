"""scikit-learn side of `npm run bench:baselines`: upstream's feature-based configuration for one task.

TfidfVectorizer(analyzer='char', ngram_range=(3, 8)) + LogisticRegression(penalty='l2', C=10, multi_class='ovr',
n_jobs=2), as in upstream code/linear_models/*_text_classifier.py. Prints one JSON object: wall time, peak memory
(this process plus its largest worker, from getrusage), feature count and test accuracy (Hit@3 for ranking tasks).
Usage: python3 sklearn_feature_based.py DATA_DIR TASK
"""
import json
import os
import resource
import sys
import time
import warnings

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

warnings.filterwarnings("ignore")
data_dir, task = sys.argv[1], sys.argv[2]
FIELDS = {
    "RuMedTop3": (("symptoms",), "code"),
    "RuMedSymptomRec": (("symptoms",), "code"),
    "RuMedDaNet": (("context", "question"), "answer"),
    "RuMedNLI": (("ru_sentence1", "ru_sentence2"), "gold_label"),
}
fields, gold = FIELDS[task]


def load(split):
    with open(os.path.join(data_dir, task, f"{split}_v1.jsonl"), encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [" ".join(r[k] for k in fields) for r in rows], [r[gold] for r in rows]


t0 = time.perf_counter()
train_x, train_y = load("train")
test_x, test_y = load("test")
tfidf = TfidfVectorizer(analyzer="char", ngram_range=(3, 8))
X = tfidf.fit_transform(train_x)
clf = LogisticRegression(penalty="l2", C=10, multi_class="ovr", n_jobs=2)
clf.fit(X, train_y)
proba = clf.predict_proba(tfidf.transform(test_x))
wall = time.perf_counter() - t0
order = np.argsort(-proba, axis=1)[:, :3]
top = [[clf.classes_[j] for j in row] for row in order]
acc = 100 * np.mean([t[0] == g for t, g in zip(top, test_y)])
hit3 = 100 * np.mean([g in t for t, g in zip(top, test_y)])
kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"task": task, "wall_s": wall, "peak_mb": kib / 1024, "features": len(tfidf.vocabulary_),
                  "accuracy": acc, "hit_at_3": hit3}))
