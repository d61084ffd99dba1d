"""Keys a guesser tries first (issue 42, item 8), refused beside the entropy estimate (auth.key_bits).

The entropy estimate sees characters, not how a person makes a key: the alphabet-and-digits sequence,
a keyboard row, md5("admin"), sha256("password"), a hex counter or a pangram all pass it, and each is
among the first things a guesser tries. Without a dependency (zxcvbn does not know the hex digests of
common passwords, the commonest "random-looking" weak key), a key is guessable when:

- it contains the hex digest (md5, sha1, sha224, sha256, sha384, sha512; either case) of a common
  password (COMMON: the usual top passwords, this service's own name and the empty string);
- half or more of it is runs of four or more characters each one code point from the last
  ("abcd", "9876", "ABCDEF") or four or more keys along a keyboard row ("qwer", "asdf", "!@#$");
- it is a counter: equal-width hex or decimal numbers, each a constant step from the one before;
- half or more of its letters are common English words of three or more letters (a pangram, a
  phrase); a passphrase of random rare words is no such thing, and `hippocampus keys new` makes keys
  of random characters.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

COMMON = ("", "password", "admin", "123456", "12345678", "123456789", "1234567890", "qwerty", "abc123", "letmein",
          "welcome", "monkey", "dragon", "secret", "changeme", "root", "toor", "test", "guest", "default", "master",
          "passw0rd", "password1", "iloveyou", "111111", "000000", "admin123", "administrator", "hippocampus",
          "apikey", "api_key", "token", "key", "login", "pass", "user", "demo", "qwerty123", "1q2w3e4r", "hello")
_ROWS = ("`1234567890-=", "qwertyuiop[]\\", "asdfghjkl;'", "zxcvbnm,./", "~!@#$%^&*()_+", "qwertyuiop{}|",
         'asdfghjkl:"', "zxcvbnm<>?", "1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik9ol0p")
_WORDS = frozenset("""
the be to of and a in that have it for not on with he as you do at this but his by from they we say her she or
an will my one all would there their what so up out if about who get which go me when make can like time no just
him know take people into year your good some could them see other than then now look only come its over think
also back after use two how our work first well way even new want because any these give day most us is are was
were has had been key api secret token service memory access admin password quick brown fox jumps lazy dog pack
box five dozen liquor jugs sphinx black quartz judge vow vexingly daft zebras jump boxing wizards quickly jackdaws
love big waltz nymph long jigs vex bud glib jocks quiz nymph crwth fjord bank hello world welcome letme login user
default master dragon monkey shadow sunshine princess football baseball summer winter spring autumn correct horse
battery staple open sesame change test guest demo local host server client production staging development main
""".split())
_WORDLIKE = re.compile(r"[a-z]{3,}")


@lru_cache(maxsize=1)
def _digests() -> frozenset[str]:
    """The hex digests of the common passwords, lower case."""
    out = set()
    for word in COMMON:
        for name in ("md5", "sha1", "sha224", "sha256", "sha384", "sha512"):
            out.add(hashlib.new(name, word.encode("utf-8")).hexdigest())
    return frozenset(out)


def _covered_by_runs(key: str) -> int:
    """How many characters of `key` lie in runs of 4+ consecutive code points or keyboard-row neighbours."""
    covered = [False] * len(key)
    low = key.lower()
    for step in (1, -1):
        start = 0
        for i in range(1, len(key) + 1):
            if i == len(key) or ord(key[i]) - ord(key[i - 1]) != step:
                if i - start >= 4:
                    covered[start:i] = [True] * (i - start)
                start = i
    rows = [*_ROWS, *(r[::-1] for r in _ROWS)]
    for i in range(len(low) - 3):
        if any(low[i:i + 4] in row for row in rows):
            covered[i:i + 4] = [True] * 4
    return sum(covered)


def _is_counter(key: str) -> bool:
    """Equal-width numbers (hex, or decimal) stepping by a constant: 00010002..., 0a0b0c0d..."""
    for base, digits in ((16, "0123456789abcdefABCDEF"), (10, "0123456789")):
        if not all(c in digits for c in key):
            continue
        for width in range(1, 17):
            if len(key) % width or len(key) // width < 4:
                continue
            numbers = [int(key[i:i + width], base) for i in range(0, len(key), width)]
            steps = {b - a for a, b in zip(numbers, numbers[1:])}
            if len(steps) == 1 and 0 not in steps:
                return True
    return False


def _word_letters(key: str) -> tuple[int, int]:
    """(letters in common English words of 3+ letters, all letters) of the key, words found greedily."""
    letters = sum(c.isalpha() for c in key)
    found = 0
    for token in _WORDLIKE.findall(key.lower()):
        i = 0
        while i < len(token):
            for j in range(len(token), i + 2, -1):
                if token[i:j] in _WORDS:
                    found += j - i
                    i = j
                    break
            else:
                i += 1
    return found, letters


def why_guessable(key: str) -> str | None:
    """The reason a guesser would find this key early, or None."""
    low = key.lower()
    if any(d in low for d in _digests() if len(d) <= len(low)):
        return "it holds the hex digest of a common password"
    if _covered_by_runs(key) * 2 >= len(key):
        return "half of it or more is a run of consecutive characters or keys along a keyboard row"
    if _is_counter(key):
        return "it is a counter of equal-width numbers"
    found, letters = _word_letters(key)
    if letters >= 12 and found * 2 >= letters:
        return "half of its letters or more are common English words (a phrase or a pangram)"
    return None
