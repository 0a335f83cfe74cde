"""Finite fields GF(q), q = p^n a prime power, as lookup tables (for the Slim Fly's MMS graphs).

Elements are the integers 0..q-1. An element is a polynomial c_0 + c_1 x + ... + c_{n-1} x^{n-1}
over the integers mod p, numbered by its coefficients read as base-p digits:
e = c_0 + c_1 p + ... + c_{n-1} p^(n-1). For a prime q (n = 1) that is the integer mod q itself.
Addition is digit-wise mod p; multiplication is polynomial multiplication reduced modulo a monic
irreducible polynomial f of degree n:

- f is the smallest monic irreducible polynomial of degree n, polynomials ordered by their lower
  coefficients c_0..c_{n-1} read as base-p digits (so for n = 1, f = x and the field is Z/p;
  GF(4): x^2 + x + 1, GF(8): x^3 + x + 1, GF(9): x^2 + 1, GF(16): x^4 + x + 1, GF(27): x^3 + 2x + 1).
  A candidate is irreducible exactly when F_p[x]/(f) has no zero divisors, which the
  multiplication table shows directly.
- the primitive element xi is the smallest element (by number) of multiplicative order q - 1.

The tables take q^2 entries, so orders are limited to MAX_ORDER; the Slim Fly needs q of a few
hundred at most (its 2 q^2 routers of degree about 3q/2 outgrow synth's size guards earlier).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from synth.core.errors import SynthError

MAX_ORDER = 1 << 12


def smallest_prime_factor(n: int) -> int:
    """The smallest prime dividing n (n >= 2), by trial division."""
    if n % 2 == 0:
        return 2
    f = 3
    while f * f <= n:
        if n % f == 0:
            return f
        f += 2
    return n


def prime_power(q: int) -> tuple[int, int] | None:
    """(p, n) with q = p^n and p prime, or None when q is not a prime power (q < 2 included)."""
    if q < 2:
        return None
    p = smallest_prime_factor(q)
    n, rest = 0, q
    while rest % p == 0:
        rest //= p
        n += 1
    return (p, n) if rest == 1 else None


def factorization(q: int) -> str:
    """'2 * 3' for 6, '2^2 * 3' for 12: for messages."""
    parts, rest = [], q
    while rest > 1:
        f = smallest_prime_factor(rest)
        k = 0
        while rest % f == 0:
            rest //= f
            k += 1
        parts.append(f"{f}^{k}" if k > 1 else str(f))
    return " * ".join(parts) if parts else str(q)


@dataclass(frozen=True, eq=False)
class FiniteField:
    order: int  # q
    characteristic: int  # p
    degree: int  # n
    modulus: tuple[int, ...]  # f's coefficients c_0..c_n (c_n = 1)
    add: np.ndarray = field(repr=False)  # (q, q) a + b
    mul: np.ndarray = field(repr=False)  # (q, q) a * b
    primitive: int = 0  # xi
    power: np.ndarray = field(default=None, repr=False)  # (q - 1,) xi^k, k = 0..q-2
    log: np.ndarray = field(default=None, repr=False)  # (q,) k with xi^k = a; -1 for a = 0

    @property
    def neg(self) -> np.ndarray:
        """(q,) -a."""
        return np.argmin(self.add, axis=1)  # the b with a + b = 0 (0 is the smallest entry, and unique)

    def sub(self, a, b):
        return self.add[np.asarray(a), self.neg[np.asarray(b)]]

    def digits(self, a: int) -> tuple[int, ...]:
        """c_0..c_{n-1} of element a."""
        return tuple((a // self.characteristic**i) % self.characteristic for i in range(self.degree))

    def modulus_text(self) -> str:
        """f written out, highest degree first, e.g. 'x^3 + 2x + 1'."""
        terms = []
        for k in range(self.degree, -1, -1):
            c = self.modulus[k]
            if c:
                coefficient = "" if c == 1 and k > 0 else str(c)
                terms.append(coefficient + ("x" if k == 1 else f"x^{k}" if k > 1 else ""))
        return " + ".join(terms)


def _digits(q: int, p: int, n: int) -> np.ndarray:
    """(q, n) base-p digits of 0..q-1, least significant first."""
    return (np.arange(q, dtype=np.int64)[:, None] // p ** np.arange(n, dtype=np.int64)[None, :]) % p


def _multiplication(digits: np.ndarray, p: int, modulus: tuple[int, ...]) -> np.ndarray:
    """(q, q) products: polynomial products of every pair, reduced modulo the monic `modulus`."""
    q, n = digits.shape
    product = np.zeros((q, q, 2 * n - 1), dtype=np.int64)
    for i in range(n):
        for j in range(n):
            product[:, :, i + j] += digits[:, None, i] * digits[None, :, j]
    product %= p
    for k in range(2 * n - 2, n - 1, -1):  # x^k = x^(k-n) x^n = -x^(k-n) (c_0 + ... + c_{n-1} x^(n-1))
        top = product[:, :, k].copy()
        for i in range(n):
            product[:, :, k - n + i] -= top * modulus[i]
        product[:, :, k] = 0
        product %= p
    return product[:, :, :n] @ (p ** np.arange(n, dtype=np.int64))


@lru_cache(maxsize=32)
def galois_field(q: int) -> FiniteField:
    """GF(q) for a prime power q <= MAX_ORDER (see the module docstring for the representation)."""
    found = prime_power(q)
    if found is None:
        raise SynthError(f"there is no field with {q} elements: {q} is not a prime power ({factorization(q)})")
    if q > MAX_ORDER:
        raise SynthError(f"GF({q}) is larger than the {MAX_ORDER} elements synth tabulates")
    p, n = found
    digits = _digits(q, p, n)
    add = ((digits[:, None, :] + digits[None, :, :]) % p) @ (p ** np.arange(n, dtype=np.int64))
    for lower in range(p**n):  # candidates f = x^n + (lower's digits), smallest first
        modulus = tuple(int(d) for d in digits[lower]) + (1,)
        mul = _multiplication(digits, p, modulus)
        if (mul[1:, 1:] != 0).all():  # no zero divisors: f is irreducible
            break
    else:  # pragma: no cover - an irreducible polynomial of every degree exists
        raise AssertionError(f"no irreducible polynomial of degree {n} over GF({p})")
    # Orders of all elements at once: the first k >= 1 with a^k = 1.
    elements = np.arange(q, dtype=np.int64)
    current, order = elements.copy(), np.zeros(q, dtype=np.int64)
    for k in range(1, q):
        order[(current == 1) & (order == 0)] = k
        current = mul[current, elements]
    primitive = int(np.flatnonzero(order == q - 1)[0])
    power = np.empty(q - 1, dtype=np.int64)
    value = 1
    for k in range(q - 1):
        power[k] = value
        value = int(mul[value, primitive])
    log = np.full(q, -1, dtype=np.int64)
    log[power] = np.arange(q - 1)
    for table in (add, mul, power, log):
        table.setflags(write=False)
    return FiniteField(q, p, n, modulus, add, mul, primitive, power, log)
