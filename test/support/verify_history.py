#!/usr/bin/env python3
"""A second verifier of the NDJSON history download, written from docs/auditors.md section 5 alone.

Python 3 standard library only. Usage: verify_history.py history.ndjson
Prints the report as JSON; exit 0 intact, 1 broken, 2 bad input.
"""
import decimal
import hashlib
import json
import sys


def js_number(value):
    """A number as JavaScript's Number.prototype.toString writes it."""
    if isinstance(value, bool):
        raise TypeError("not a number")
    if isinstance(value, int):
        return str(value)
    if value != value or value in (float("inf"), float("-inf")):
        return "null"
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    sign = "-" if value < 0 else ""
    # repr gives the shortest digits that round-trip, as JavaScript does.
    digits_tuple = decimal.Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(str(d) for d in digits_tuple.digits)
    k = len(digits)
    n = digits_tuple.exponent + k  # value = 0.d1d2... x 10^n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        exponent = n - 1
        mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
        text = mantissa + "e" + ("+" if exponent >= 0 else "-") + str(abs(exponent))
    return sign + text


SHORT_ESCAPES = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"}


def js_string(text):
    """A string as JSON.stringify writes it: only quotes, backslashes, controls and lone surrogates escaped."""
    out = ['"']
    for char in text:
        code = ord(char)
        if code in SHORT_ESCAPES:
            out.append(SHORT_ESCAPES[code])
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            out.append("\\u%04x" % code)
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def canonical_json(value):
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return js_string(value)
    if isinstance(value, (int, float)):
        return js_number(value)
    if isinstance(value, list):
        return "[" + ",".join(canonical_json(item) for item in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value.keys(), key=lambda key: key.encode("utf-16-be", "surrogatepass"))
        return "{" + ",".join(js_string(key) + ":" + canonical_json(value[key]) for key in keys) + "}"
    raise TypeError("not a JSON value: %r" % (value,))


def event_hash(line, previous_hash):
    content = {
        "data": line["data"],
        "id": line["id"],
        "metadata": line["metadata"],
        "previousHash": previous_hash,
        "streamName": line["streamName"],
        "streamVersion": line["streamVersion"],
        "type": line["type"],
    }
    text = canonical_json(content)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class BadInput(Exception):
    pass


def parse(raw, number):
    try:
        line = json.loads(raw)
    except ValueError:
        raise BadInput("line %d is not JSON" % number)
    if not isinstance(line, dict):
        raise BadInput("line %d is not a JSON object" % number)
    for field, kinds in (("id", str), ("type", str), ("streamName", str), ("metadata", dict)):
        if not isinstance(line.get(field), kinds):
            raise BadInput("line %d: %s" % (number, field))
    for field in ("streamVersion", "position"):
        value = line.get(field)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise BadInput("line %d: %s" % (number, field))
    if "data" not in line:
        raise BadInput("line %d: data" % number)
    for field in ("hash", "previousHash"):
        if line.get(field, 0) is not None and not isinstance(line.get(field), str):
            raise BadInput("line %d: %s" % (number, field))
    return line


def why_broken(line, head, last_position):
    """Position, version, previous hash, hash: in that order (docs/auditors.md, Verifying a download)."""
    version = line["streamVersion"]
    previous = line["previousHash"]
    if last_position is not None and line["position"] <= last_position:
        return "out of commit order"
    if head is not None and version != head[0] + 1:
        return "version missing"
    if previous is None:
        return "previous hash missing"
    if head is not None and previous != head[1]:
        return "previous hash mismatch"
    if head is None and version == 0 and previous != "":
        return "previous hash mismatch"
    if line.get("uncommitted"):
        return "no hash" if line["hash"] is None else None
    if line["hash"] != event_hash(line, previous):
        return "hash mismatch"
    return None


def verify(lines):
    heads = {}
    last_position = None
    report = {"ok": True, "events": 0, "streams": 0, "uncommitted": 0, "fromPosition": None, "toPosition": None}
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        line = parse(raw, number)
        head = heads.get(line["streamName"])
        reason = why_broken(line, head, last_position)
        if reason is not None:
            report["ok"] = False
            report["broken"] = {
                "streamName": line["streamName"],
                "streamVersion": line["streamVersion"],
                "position": line["position"],
                "reason": reason,
            }
            return report
        report["events"] += 1
        if head is None:
            report["streams"] += 1
        if line.get("uncommitted"):
            report["uncommitted"] += 1
        if report["fromPosition"] is None:
            report["fromPosition"] = line["position"]
        report["toPosition"] = line["position"]
        last_position = line["position"]
        heads[line["streamName"]] = (line["streamVersion"], line["hash"])
    return report


def main(argv):
    if len(argv) != 2:
        print("usage: verify_history.py history.ndjson", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8", errors="surrogatepass") as lines:
            report = verify(lines)
    except (BadInput, OSError) as error:
        print(str(error), file=sys.stderr)
        return 2
    print(json.dumps(report))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
