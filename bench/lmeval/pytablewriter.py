"""A stand-in for pytablewriter (missing from the local package index): lm-evaluation-harness imports it only to
print its final results table, which `npm run bench:loglik` does not read."""


class _Writer:
    def __init__(self, *args, **kwargs):
        self.headers = []
        self.value_matrix = []

    def dumps(self):
        rows = [self.headers, *self.value_matrix]
        return "\n".join(" | ".join(str(c) for c in row) for row in rows)


class MarkdownTableWriter(_Writer):
    pass


class LatexTableWriter(_Writer):
    pass
