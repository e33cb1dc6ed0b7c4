"""Writes jcs.json: inputs and their RFC 8785 canonical form as computed by the `rfc8785` PyPI
package (an implementation independent of ours), for SesamePinning's JCS tests.
Run: pip install rfc8785 && python3 make_vectors.py > jcs.json"""
import base64, json, random, struct
import rfc8785

random.seed(8785)

# RFC 8785 Appendix B's IEEE 754 bit patterns, and the §3.2.3 sorting example.
RFC_NUMBERS = [
    0x0000000000000000, 0x8000000000000000, 0x0000000000000001, 0x8000000000000001, 0x7fefffffffffffff, 0xffefffffffffffff,
    0x4340000000000000, 0xc340000000000000, 0x4430000000000000, 0x44b52d02c7e14af5, 0x44b52d02c7e14af6, 0x44b52d02c7e14af7,
    0x444b1ae4d6e2ef4e, 0x444b1ae4d6e2ef4f, 0x444b1ae4d6e2ef50, 0x3eb0c6f7a0b5ed8c, 0x3eb0c6f7a0b5ed8d, 0x41b3de4355555553,
    0x41b3de4355555554, 0x41b3de4355555555, 0x41b3de4355555556, 0x41b3de4355555557, 0xbecbf647612f3696, 0x43143ff3c1cb0959,
]
SORTING = {"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One",
           "\U0001F600": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis"}
ALPHABET = ["a", "B", "z", "é", "€", "\u2028", "\U0001F600", "\U00010000", "\ufb33", "\"", "\\", "\n", "\x01", "\x1f", "\x7f", "/", " "]


def number():
    kind = random.random()
    if kind < 0.3:
        return random.randint(-10**6, 10**6)
    if kind < 0.5:
        return random.choice([0.1, 1e21, 1e-7, 123e-20, float(2**53), -float(2**53), 2**53 - 1, 4.5, 1e300, 5e-324])
    while True:
        value = struct.unpack("<d", struct.pack("<Q", random.getrandbits(64)))[0]
        if value == value and value not in (float("inf"), float("-inf")):
            return value


def text():
    return "".join(random.choice(ALPHABET) for _ in range(random.randint(0, 6)))


def value(depth=0):
    kind = random.randint(0, 6 if depth < 3 else 3)
    if kind == 0: return None
    if kind == 1: return random.choice([True, False])
    if kind == 2: return number()
    if kind == 3: return text()
    if kind == 4: return [value(depth + 1) for _ in range(random.randint(0, 4))]
    return {text(): value(depth + 1) for _ in range(random.randint(0, 5))}


def vector(item):
    return {"input": json.dumps(item, ensure_ascii=False), "canonical": base64.b64encode(rfc8785.dumps(item)).decode()}


cases = [vector(struct.unpack(">d", bits.to_bytes(8, "big"))[0]) for bits in RFC_NUMBERS]
cases.append(vector(SORTING))
cases += [vector(value()) for _ in range(300)]
print(json.dumps(cases, indent=1, ensure_ascii=False))
