# tests/integration/jsonfold/gen.py - the differential corpus: JSON bodies, one a line, whose keys spell the
# rule's fields "amount" and "pay.sku" in case variants, with the Unicode specials Go folds (U+212A KELVIN SIGN,
# U+017F LONG S), other folding letters, JSON escapes of all of them, exact and folded duplicates at depth, and
# unrelated objects with duplicates of their own. Values are unique strings "vN". Deterministic (seeded).
# Usage: /usr/bin/python3 gen.py [COUNT]
import json, random, sys

rng = random.Random(19)
n_out = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
serial = [0]

def val():
    serial[0] += 1
    return "v%d" % serial[0]

def esc_some(key):
    """The key as a JSON string literal, some characters written as \\uXXXX escapes."""
    out = []
    for ch in key:
        r = rng.random()
        if r < 0.25:
            out.append("\\u%04x" % ord(ch) if ord(ch) < 0x10000 else json.dumps(ch)[1:-1])
        elif r < 0.3:
            out.append("\\u%04X" % ord(ch) if ord(ch) < 0x10000 else json.dumps(ch)[1:-1])
        elif ch in '"\\':
            out.append("\\" + ch)
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'

def variants(word):
    """Spellings of <word>: equal under folding, or near misses that are not."""
    specials = {"k": ["k", "K", "\u212a"], "s": ["s", "S", "\u017f"]}
    def one():
        return "".join(rng.choice(specials.get(c, [c, c.upper()])) for c in word)
    near = [word + "s", word[:-1], word + " ", word.replace("u", "\u00fc"), word.replace("a", "\u00e4"),
            "\u0131" + word[1:], word.upper() + "\u0307"]
    return one() if rng.random() < 0.85 else rng.choice(near)

def obj(members):
    rng.shuffle(members)
    return "{" + ",".join("%s:%s" % (esc_some(k) if rng.random() < 0.5 else json.dumps(k, ensure_ascii=False), v)
                          for k, v in members) + "}"

def pay():
    m = [(variants("sku"), json.dumps(val())) for _ in range(rng.choice([0, 1, 1, 2, 3]))]
    if rng.random() < 0.2:
        m.append(("sku", json.dumps(val())))
    if rng.random() < 0.3:
        m.append(("meta", obj([("Env", json.dumps(val())), ("env", json.dumps(val()))])))
    return obj(m)

def body():
    m = [(variants("amount"), json.dumps(val())) for _ in range(rng.choice([0, 1, 1, 1, 2, 3]))]
    for _ in range(rng.choice([0, 1, 1, 2])):
        m.append((variants("pay"), pay()))
    if rng.random() < 0.3:
        m.append(("metadata", obj([("Env", json.dumps(val())), ("env", json.dumps(val())), ("ENV", json.dumps(val()))])))
    if rng.random() < 0.05:
        m.append(("x", obj([("dup", "1"), ("dup", "2")])))  # an exact duplicate elsewhere
    return obj(m)

# fixed cases first: the body and its obvious variants
fixed = ['{"amount":"v1","AMOUNT":"v2"}', '{"AMOUNT":"v3"}', '{"amount":"v4"}', '{"pay":{"sku":"v5","\u017fku":"v6"}}',
         '{"pay":{"sku":"v7","s\\u212au":"v8"}}', '{"pay":{"sku":"v9"},"PAY":{"sku":"v10"}}',
         '{"amount":"v11","metadata":{"Env":"v12","env":"v13"}}', '{"pay":{"\\u017fku":"v14"}}']
serial[0] = 100
for line in fixed:
    print(line)
for _ in range(n_out):
    print(body())
