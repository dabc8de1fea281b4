"""How far to trust a ratio measured over rounds (issue 39): the median of the rounds'
own ratios and a distribution-free confidence interval for it from order statistics.

For n rounds sorted x(1) <= ... <= x(n), the interval [x(k), x(n+1-k)] holds the true
median with probability 1 - 2 P(B <= k-1), B ~ Binomial(n, 1/2), whatever the
distribution of the rounds (they need only be independent and alike). The narrowest
such pair reaching the confidence asked for is chosen; with too few rounds for it (fewer
than 6 for 95%) the widest pair, [min, max], is returned with the confidence it has, so
a reader always sees what the interval is worth. Standard library only.
"""

from math import comb

CONFIDENCE = 0.95


def coverage(n, k):
    """The probability that [x(k), x(n+1-k)] of n rounds holds the median (1 <= k <= n/2)."""
    below = sum(comb(n, i) for i in range(k)) / 2 ** n
    return 1.0 - 2.0 * below


def median(values):
    v = sorted(values)
    n = len(v)
    if n == 0:
        return None
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


class Interval:
    """The median of rounds and its order-statistic interval."""

    def __init__(self, values, confidence=CONFIDENCE):
        v = sorted(values)
        n = len(v)
        if n == 0:
            raise ValueError("no rounds")
        self.n = n
        self.median = median(v)
        if n == 1:
            self.lo = self.hi = v[0]
            self.confidence = 0.0
            return
        k = 1
        while k + 1 <= n // 2 and coverage(n, k + 1) >= confidence:
            k += 1
        self.lo, self.hi = v[k - 1], v[n - k]
        self.confidence = coverage(n, k)
        self.asked = confidence

    def half_width(self):
        """The larger distance from the median to an end, as a fraction of the median."""
        return max(self.median - self.lo, self.hi - self.median) / max(abs(self.median), 1e-12)

    def confident(self, confidence=CONFIDENCE):
        return self.confidence >= confidence

    def within(self, precision):
        """Confident, and no end further than `precision` (a fraction) from the median."""
        return self.confident() and self.half_width() <= precision

    def verdict(self, limit):
        """PASS: the whole confident interval at or under the limit; MISS: its lower end
        over it (the target is missed whatever the noise); else UNSURE."""
        if self.confident() and self.hi <= limit:
            return "PASS"
        if self.confident() and self.lo > limit:
            return "MISS"
        return "UNSURE"

    def cell(self):
        return f"{self.median:.3f}x [{self.lo:.3f}-{self.hi:.3f}]"
