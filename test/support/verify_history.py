#!/usr/bin/env python3
"""A second verifier of the NDJSON history download, written from docs/auditors.md sections 5 and 6 alone.

Python 3 standard library only. Usage: verify_history.py history.ndjson [digest.json jwks.json]
With a digest (as GET .../audit/digests/latest gives it) and the keys of /.well-known/digest-keys.json, it also
checks the download against the digest: signature, chains, log root at `size`, length (section 6, "A download
checked against a digest"). Prints the report as JSON; exit 0 intact, 1 broken (chain or digest), 2 bad input.
"""
import base64
import datetime
import decimal
import hashlib
import json
import re
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


def empty_report():
    return {"ok": True, "events": 0, "streams": 0, "uncommitted": 0, "fromPosition": None, "toPosition": None}


def verify(lines, log_check=None):
    """The chains of every line, in order; with a log_check, each good line is also a leaf of the digest's tree.

    The log check runs after the line is counted, so a log root that fails at the size-th line counts that line,
    as the chain check counts any good line, and then stops the walk.
    """
    heads = {}
    last_position = None
    report = empty_report()
    if log_check is not None and log_check.problem_before_any_line():
        return report
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
        if log_check is not None and log_check.add(line["hash"]):
            return report
    return report


# --- Section 6: the log tree (RFC 9162 section 2.1) ---------------------------------------------------------


def leaf_hash(event_hash_bytes):
    """The 0x00 prefix keeps a leaf from ever being taken for a node (RFC 9162 second-preimage protection)."""
    return hashlib.sha256(b"\x00" + event_hash_bytes).digest()


def node_hash(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


class LogTree:
    """A log root rebuilt in one pass: a stack of the roots of full subtrees, as a binary counter carries.

    It holds one node per level (about 20 for a million leaves), so a download of any length is checked
    in constant memory, as the docs' logRoot() does.
    """

    def __init__(self):
        self.stack = []
        self.size = 0

    def push(self, event_hash_bytes):
        """Push the leaf, then merge once for each trailing 1 bit of the count before it."""
        self.stack.append(leaf_hash(event_hash_bytes))
        count = self.size
        while count & 1:
            right = self.stack.pop()
            left = self.stack.pop()
            self.stack.append(node_hash(left, right))
            count >>= 1
        self.size += 1

    def root(self):
        """The stack folded from the right, node(s[0], node(s[1], ... s[last])); SHA-256() of nothing when empty."""
        if not self.stack:
            return hashlib.sha256(b"").digest()
        root = self.stack[-1]
        for subtree in reversed(self.stack[:-1]):
            root = node_hash(subtree, root)
        return root


HEX_64 = re.compile(r"[0-9a-f]{64}")


def hash_bytes(text):
    """A line's hash as a leaf's input: 64 lowercase hex digits as 32 bytes, or None if it is not one."""
    if isinstance(text, str) and HEX_64.fullmatch(text):
        return bytes.fromhex(text)
    return None


class LogCheck:
    """Steps 3 and 4 of a download checked against a digest: the root at `size` lines, then the length."""

    def __init__(self, digest, digest_report):
        self.size = digest["size"]
        self.log_root = digest["logRoot"]
        self.report = digest_report
        self.tree = LogTree()

    def problem_before_any_line(self):
        """A tree of size 0 is decided before any line is read: its root must be the empty one."""
        return self.size == 0 and self.root_fails()

    def add(self, line_hash):
        """A good line's hash as the next leaf; True when the root at `size` fails and the walk must stop."""
        if self.tree.size >= self.size:
            return False  # lines after the size-th are chains only: the digest says nothing about them
        leaf = hash_bytes(line_hash)
        if leaf is None:
            # A hash that is not 64 hex digits cannot be the leaf the service hashed: the root cannot hold.
            self.fail("log-root")
            return True
        self.tree.push(leaf)
        return self.tree.size == self.size and self.root_fails()

    def root_fails(self):
        if self.tree.root().hex() != self.log_root:
            self.fail("log-root")
            return True
        return False

    def root_checked(self):
        """Whether the root at `size` was decided, held or not: then the digest's verdict stands."""
        return self.report["problem"] is not None or self.tree.size == self.size

    def finish(self):
        """Step 4: a download that ends before `size` lines lost events from its end."""
        if self.report["problem"] is None and self.tree.size < self.size:
            self.fail("short")

    def fail(self, problem):
        self.report["ok"] = False
        self.report["problem"] = problem


# --- Section 6: the digest's signature (compact JWS, ES256) -------------------------------------------------

# NIST P-256 (secp256r1), y^2 = x^3 - 3x + b over GF(p), base point G of prime order N (SEC 2, FIPS 186-4 D.1.2.3).
P = 0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF
A = P - 3
B = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B
N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
G = (
    0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
    0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5,
)


def on_curve(point):
    x, y = point
    return 0 <= x < P and 0 <= y < P and (y * y - (x * x * x + A * x + B)) % P == 0


def point_add(p1, p2):
    """Affine addition, None standing for the point at infinity; slow but plain, and one check needs few."""
    if p1 is None:
        return p2
    if p2 is None:
        return p1
    (x1, y1), (x2, y2) = p1, p2
    if x1 == x2 and (y1 + y2) % P == 0:
        return None
    if p1 == p2:
        slope = (3 * x1 * x1 + A) * pow(2 * y1, -1, P) % P
    else:
        slope = (y2 - y1) * pow(x2 - x1, -1, P) % P
    x3 = (slope * slope - x1 - x2) % P
    return (x3, (slope * (x1 - x3) - y1) % P)


def scalar_multiply(k, point):
    """Double-and-add from the most significant bit; timing does not matter, nothing here is secret."""
    result = None
    for bit in bin(k)[2:]:
        result = point_add(result, result)
        if bit == "1":
            result = point_add(result, point)
    return result


def ecdsa_p256_verifies(public_point, message, r, s):
    """ECDSA verification (FIPS 186-4 section 6.4.2) with SHA-256, whose 256 bits need no truncation for N."""
    if not (1 <= r < N and 1 <= s < N) or not on_curve(public_point):
        return False
    e = int.from_bytes(hashlib.sha256(message).digest(), "big")
    w = pow(s, -1, N)
    point = point_add(scalar_multiply(e * w % N, G), scalar_multiply(r * w % N, public_point))
    return point is not None and point[0] % N == r


BASE64URL = re.compile(r"[A-Za-z0-9_-]*")


def base64url_decode(text):
    """Strict base64url without padding: the standard library's decoder would skip stray characters."""
    if not isinstance(text, str) or not BASE64URL.fullmatch(text) or len(text) % 4 == 1:
        return None
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


SIGNED_FIELDS = ("headsRoot", "logRoot", "position", "recordedAt", "size", "streams", "tenantId")


def expected_payload(digest):
    """The seven signed fields as JSON, keys sorted, no whitespace: the bytes the signature must be over.

    canonical_json writes them as the service's JSON.stringify does; for the ASCII fields of a digest that is
    byte for byte Python's json.dumps(fields, sort_keys=True, separators=(",", ":")).
    """
    return canonical_json({field: digest[field] for field in SIGNED_FIELDS}).encode("utf-8", "surrogatepass")


def well_formed_signed_fields(digest):
    """Unsigned digests (size, logRoot, signature null) prove nothing; a tree needs a size and a 64-hex root."""
    if any(field not in digest for field in SIGNED_FIELDS):
        return False
    size = digest["size"]
    return (
        isinstance(size, int)
        and not isinstance(size, bool)
        and size >= 0
        and isinstance(digest["logRoot"], str)
        and HEX_64.fullmatch(digest["logRoot"]) is not None
        and isinstance(digest["signature"], str)
    )


def parse_instant(text):
    """An ISO 8601 time with a zone, as an aware datetime, or None: a time without a zone cannot be compared."""
    if not isinstance(text, str):
        return None
    try:
        instant = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    return instant if instant.tzinfo is not None else None


def key_may_sign(key, recorded_at):
    """A retired key still verifies what it signed before retirement, and nothing recorded after it."""
    if "retiredAt" not in key:
        return True
    retired_at = parse_instant(key["retiredAt"])
    recorded = parse_instant(recorded_at)
    return retired_at is not None and recorded is not None and recorded < retired_at


def public_point(key):
    """The JWK's point, if it is an EC P-256 key with 32-byte coordinates on the curve."""
    if not isinstance(key, dict) or key.get("kty") != "EC" or key.get("crv") != "P-256":
        return None
    x, y = base64url_decode(key.get("x")), base64url_decode(key.get("y"))
    if x is None or y is None or len(x) != 32 or len(y) != 32:
        return None
    point = (int.from_bytes(x, "big"), int.from_bytes(y, "big"))
    return point if on_curve(point) else None


def signature_holds(digest, keys):
    """Step 1: the compact JWS is ES256 by a key of the set, over exactly the digest's own seven fields."""
    if not well_formed_signed_fields(digest):
        return False
    parts = digest["signature"].split(".")
    if len(parts) != 3:
        return False
    header_bytes, payload, signature = (base64url_decode(part) for part in parts)
    if header_bytes is None or payload is None or signature is None or len(signature) != 64:
        return False
    if payload != expected_payload(digest):
        return False  # a signature over other fields proves nothing about these
    try:
        header = json.loads(header_bytes)
    except ValueError:
        return False
    if not isinstance(header, dict) or header.get("alg") != "ES256" or not isinstance(header.get("kid"), str):
        return False
    message = (parts[0] + "." + parts[1]).encode("ascii")
    r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
    for key in keys:
        if not isinstance(key, dict) or key.get("kid") != header["kid"]:
            continue
        point = public_point(key)
        if point is not None and key_may_sign(key, digest["recordedAt"]) and ecdsa_p256_verifies(point, message, r, s):
            return True
    return False


# --- A download checked against a digest ----------------------------------------------------------------------


def verify_against_digest(lines, digest, keys):
    """Signature, chains, log root at `size`, length: in that order, stopping at the first problem.

    A broken chain is reported as without a digest. If it broke before the root at `size` was checked, the digest
    part says ok false with problem null (the digest was not established, nor refuted); if after, the digest's
    verdict stands, since it says nothing about later lines. Top-level ok is false either way.
    """
    digest_report = {"ok": True, "problem": None, "position": digest.get("position"), "size": digest.get("size")}
    if not signature_holds(digest, keys):
        report = empty_report()
        report["ok"] = False
        digest_report.update(ok=False, problem="signature")
        report["digest"] = digest_report
        return report
    log_check = LogCheck(digest, digest_report)
    report = verify(lines, log_check)
    if report["ok"]:
        log_check.finish()
    elif not log_check.root_checked():
        digest_report["ok"] = False  # the chain broke before the root at `size` could be checked
    report["ok"] = report["ok"] and digest_report["ok"]
    report["digest"] = digest_report
    return report


def read_json(path):
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except ValueError:
        raise BadInput("%s is not JSON" % path)


def read_digest_inputs(digest_path, jwks_path):
    """The digest must be a JSON object and the key set {"keys": [...]}; anything else is bad input (exit 2)."""
    digest = read_json(digest_path)
    if not isinstance(digest, dict):
        raise BadInput("%s is not a JSON object" % digest_path)
    jwks = read_json(jwks_path)
    if not isinstance(jwks, dict) or not isinstance(jwks.get("keys"), list):
        raise BadInput('%s is not a key set {"keys": [...]}' % jwks_path)
    return digest, jwks["keys"]


def main(argv):
    if len(argv) not in (2, 4):
        print("usage: verify_history.py history.ndjson [digest.json jwks.json]", file=sys.stderr)
        return 2
    try:
        digest_inputs = read_digest_inputs(argv[2], argv[3]) if len(argv) == 4 else None
        with open(argv[1], encoding="utf-8", errors="surrogatepass") as lines:
            report = verify(lines) if digest_inputs is None else verify_against_digest(lines, *digest_inputs)
    except (BadInput, OSError) as error:
        print(str(error), file=sys.stderr)
        return 2
    print(json.dumps(report))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
