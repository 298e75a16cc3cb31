# cython: language_level=3, boundscheck=False, wraparound=False, overflowcheck=True, embedsignature=True, embedsignature.format=python, autotestdict=False
"""Compiled accounting core: the same functions as `_accounting_py`, with C fast paths.

Fast paths cover the common shapes (string and typed-need payloads, no arcs, ints
that fit in 64 bits, controller-produced states); every other case is handed to the
pure reference module, so results are identical by construction and checked by the
differential tests. Digests use a C BLAKE2b-256 that matches `hashlib.blake2b`.
Field values are read and written through the slot offsets of the dataclasses.
"""

from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from cpython.list cimport PyList_GET_SIZE
from libc.string cimport memcpy, memcmp
from libc.stdlib cimport realloc, free
from libc.limits cimport LLONG_MIN

import types

from . import _accounting_py as _py
from . import _state as _st
from ._core import ComputeNeed, EvidenceNeed, Verdict
from ._state import (
    AuditCursor, CandidateDisposition, ControllerAction, ControllerEventKind,
    ControllerState, ControllerStatus, DependencyRecord, EvaluationReceipt, EventReceipt,
    Lease, LeaseKind, ResolutionOutcome,
)

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    static const uint64_t four_b2_iv[8] = {
        0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
        0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
        0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};
    static const uint8_t four_b2_sigma[12][16] = {
        {0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15}, {14,10,4,8,9,15,13,6,1,12,0,2,11,7,5,3},
        {11,8,12,0,5,2,15,13,10,14,3,6,7,1,9,4}, {7,9,3,1,13,12,11,14,2,6,5,10,4,0,15,8},
        {9,0,5,7,2,4,10,15,14,1,11,12,6,8,3,13}, {2,12,6,10,0,11,8,3,4,13,7,5,15,14,1,9},
        {12,5,1,15,14,13,4,10,0,7,6,3,9,2,8,11}, {13,11,7,14,12,1,3,9,5,0,15,4,8,6,2,10},
        {6,15,14,9,11,3,0,8,12,2,13,7,1,4,10,5}, {10,2,8,4,7,6,1,5,15,11,9,14,3,12,13,0},
        {0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15}, {14,10,4,8,9,15,13,6,1,12,0,2,11,7,5,3}};
    static inline uint64_t four_rotr64(uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }
    static inline uint64_t four_load64(const uint8_t *p) {
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        uint64_t v; memcpy(&v, p, 8); return v;
    #else
        uint64_t v = 0; int i; for (i = 7; i >= 0; i--) v = (v << 8) | p[i]; return v;
    #endif
    }
    #define FOUR_B2G(a,b,c,d,x,y) do { \
        v[a] = v[a] + v[b] + (x); v[d] = four_rotr64(v[d] ^ v[a], 32); \
        v[c] = v[c] + v[d];       v[b] = four_rotr64(v[b] ^ v[c], 24); \
        v[a] = v[a] + v[b] + (y); v[d] = four_rotr64(v[d] ^ v[a], 16); \
        v[c] = v[c] + v[d];       v[b] = four_rotr64(v[b] ^ v[c], 63); } while (0)
    static void four_b2_compress(uint64_t h[8], const uint8_t block[128], uint64_t t, int last) {
        uint64_t m[16], v[16]; int i, r;
        for (i = 0; i < 16; i++) m[i] = four_load64(block + 8 * i);
        for (i = 0; i < 8; i++) { v[i] = h[i]; v[i + 8] = four_b2_iv[i]; }
        v[12] ^= t;
        if (last) v[14] = ~v[14];
        #define FOUR_B2ROUND(r) do { const uint8_t *s = four_b2_sigma[r]; \
            FOUR_B2G(0, 4,  8, 12, m[s[0]],  m[s[1]]);  FOUR_B2G(1, 5,  9, 13, m[s[2]],  m[s[3]]); \
            FOUR_B2G(2, 6, 10, 14, m[s[4]],  m[s[5]]);  FOUR_B2G(3, 7, 11, 15, m[s[6]],  m[s[7]]); \
            FOUR_B2G(0, 5, 10, 15, m[s[8]],  m[s[9]]);  FOUR_B2G(1, 6, 11, 12, m[s[10]], m[s[11]]); \
            FOUR_B2G(2, 7,  8, 13, m[s[12]], m[s[13]]); FOUR_B2G(3, 4,  9, 14, m[s[14]], m[s[15]]); \
        } while (0)
        (void)r;
        FOUR_B2ROUND(0); FOUR_B2ROUND(1); FOUR_B2ROUND(2); FOUR_B2ROUND(3);
        FOUR_B2ROUND(4); FOUR_B2ROUND(5); FOUR_B2ROUND(6); FOUR_B2ROUND(7);
        FOUR_B2ROUND(8); FOUR_B2ROUND(9); FOUR_B2ROUND(10); FOUR_B2ROUND(11);
        for (i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
    }
    /* BLAKE2b with a 32-byte digest, no key, no salt or personalisation. */
    static void four_blake2b_256(const unsigned char *in, size_t n, unsigned char *out) {
        uint64_t h[8]; uint8_t block[128]; uint64_t t = 0; int i;
        for (i = 0; i < 8; i++) h[i] = four_b2_iv[i];
        h[0] ^= 0x01010000ULL ^ 32ULL;
        while (n > 128) { t += 128; four_b2_compress(h, in, t, 0); in += 128; n -= 128; }
        memset(block, 0, 128); memcpy(block, in, n); t += n;
        four_b2_compress(h, block, t, 1);
        for (i = 0; i < 32; i++) out[i] = (unsigned char)(h[i / 8] >> (8 * (i % 8)));
    }
    """
    void four_blake2b_256(const unsigned char *data, size_t n, unsigned char *out)

cdef extern from "Python.h":
    ctypedef struct PyMemberDef:
        Py_ssize_t offset
    ctypedef struct PyMemberDescrObject:
        PyMemberDef *d_member
    const char *PyUnicode_AsUTF8AndSize(object, Py_ssize_t *) except NULL
    long long PyLong_AsLongLongAndOverflow(object, int *) except? -1
    PyObject *PyDict_GetItem(object, object)


FORMAT_VERSION = _py.FORMAT_VERSION

# ------------------------------------------------------------------ slot access


cdef Py_ssize_t _offset(type cls, str name) except -1:
    descr = cls.__dict__[name]
    if isinstance(descr, _st._LazySet):
        descr = descr.slot
    if type(descr) is not types.MemberDescriptorType:
        raise ImportError(f"{cls.__name__}.{name} is not a slot")
    return (<PyMemberDescrObject *>descr).d_member.offset


cdef inline object _get(object obj, Py_ssize_t offset):
    cdef PyObject *value = (<PyObject **>((<char *><PyObject *>obj) + offset))[0]
    if value is NULL:
        raise AttributeError("unset slot")
    return <object>value


cdef inline void _put(object obj, Py_ssize_t offset, object value):
    cdef PyObject **slot = <PyObject **>((<char *><PyObject *>obj) + offset)
    cdef PyObject *old = slot[0]
    Py_INCREF(value)
    slot[0] = <PyObject *>value
    Py_XDECREF(old)


cdef type T_STATE = ControllerState
cdef type T_RECORD = DependencyRecord
cdef type T_EVAL = EvaluationReceipt
cdef type T_EVENT = EventReceipt
cdef type T_EVENT_DATA = _st.ControllerEvent
cdef type T_LEASE = Lease
cdef type T_PREFIX = _st._Prefix
cdef type T_LOG = _st._Log
cdef type T_EVIDENCE = EvidenceNeed
cdef type T_COMPUTE = ComputeNeed

cdef Py_ssize_t S_EXCL = _offset(T_STATE, "exclusions")
cdef Py_ssize_t S_EVID = _offset(T_STATE, "used_evidence")
cdef Py_ssize_t S_COMP = _offset(T_STATE, "used_compute")
cdef Py_ssize_t S_DEPS = _offset(T_STATE, "dependencies")
cdef Py_ssize_t S_EB = _offset(T_STATE, "evidence_budget")
cdef Py_ssize_t S_CB = _offset(T_STATE, "compute_budget")
cdef Py_ssize_t S_DB = _offset(T_STATE, "dependency_budget")
cdef Py_ssize_t S_STATUS = _offset(T_STATE, "status")
cdef Py_ssize_t S_DISP = _offset(T_STATE, "candidate_disposition")
cdef Py_ssize_t S_COUNT = _offset(T_STATE, "evaluation_count")
cdef Py_ssize_t S_CLOCK = _offset(T_STATE, "clock")
cdef Py_ssize_t S_LEASE = _offset(T_STATE, "pending_lease")
cdef Py_ssize_t S_HELD = _offset(T_STATE, "held_reason")

cdef Py_ssize_t R_BEFORE = _offset(T_EVAL, "before")
cdef Py_ssize_t R_VERDICT = _offset(T_EVAL, "verdict")
cdef Py_ssize_t R_PAYLOAD = _offset(T_EVAL, "payload")
cdef Py_ssize_t R_ARCS = _offset(T_EVAL, "dependency_arcs")
cdef Py_ssize_t R_ACTION = _offset(T_EVAL, "action")
cdef Py_ssize_t R_AFTER = _offset(T_EVAL, "after")
cdef Py_ssize_t R_INDEX = _offset(T_EVAL, "evaluation_index")
cdef Py_ssize_t R_DIGEST = _offset(T_EVAL, "digest")

cdef Py_ssize_t E_BEFORE = _offset(T_EVENT, "before")
cdef Py_ssize_t E_EVENT = _offset(T_EVENT, "event")
cdef Py_ssize_t E_ACTION = _offset(T_EVENT, "action")
cdef Py_ssize_t E_AFTER = _offset(T_EVENT, "after")
cdef Py_ssize_t E_DIGEST = _offset(T_EVENT, "digest")

cdef Py_ssize_t V_KIND = _offset(T_EVENT_DATA, "kind")
cdef Py_ssize_t V_LEASE_ID = _offset(T_EVENT_DATA, "lease_id")
cdef Py_ssize_t V_OUTCOME = _offset(T_EVENT_DATA, "outcome")
cdef Py_ssize_t V_DEPENDENCY = _offset(T_EVENT_DATA, "dependency")
cdef Py_ssize_t V_CLOCK = _offset(T_EVENT_DATA, "clock")

cdef Py_ssize_t L_ID = _offset(T_LEASE, "lease_id")
cdef Py_ssize_t L_KIND = _offset(T_LEASE, "kind")
cdef Py_ssize_t L_OBLIGATION = _offset(T_LEASE, "obligation")
cdef Py_ssize_t L_DEADLINE = _offset(T_LEASE, "deadline")

cdef Py_ssize_t P_LOG = _offset(T_PREFIX, "log")
cdef Py_ssize_t P_N = _offset(T_PREFIX, "n")
cdef Py_ssize_t G_BASE_KEYS = _offset(T_LOG, "base_keys")
cdef Py_ssize_t G_KEYS = _offset(T_LOG, "keys")
cdef Py_ssize_t G_INDEX = _offset(T_LOG, "index")

cdef Py_ssize_t N_EVIDENCE = _offset(T_EVIDENCE, "evidence")
cdef Py_ssize_t N_STEP = _offset(T_COMPUTE, "step")

cdef object RUNNING = ControllerStatus.RUNNING
cdef object ACCEPTED = ControllerStatus.ACCEPTED
cdef object SOURCE_ADMISSIBLE = CandidateDisposition.SOURCE_ADMISSIBLE
cdef object TERMINALLY_ACCEPTED = CandidateDisposition.TERMINALLY_ACCEPTED
cdef object V_NO = Verdict.NO
cdef object V_YES = Verdict.YES
cdef object V_MAYBE = Verdict.MAYBE
cdef object A_EXCLUDE = ControllerAction.EXCLUDE_RETRY
cdef object A_ADMIT = ControllerAction.ADMIT_NEXT
cdef object A_GATHER = ControllerAction.GATHER
cdef object A_ACCEPT = ControllerAction.EXIT_ACCEPT
cdef object A_REEVALUATE = ControllerAction.REEVALUATE
cdef object K_EVIDENCE_RETURNED = ControllerEventKind.EVIDENCE_RETURNED
cdef object LEASE_EVIDENCE = LeaseKind.EVIDENCE
cdef object EMPTY = frozenset()

# Enum members are singletons: match them by identity, most frequent first.
cdef list _ENUM_LIST = [m for e in (Verdict, ControllerAction, ControllerEventKind,
                                    ResolutionOutcome, LeaseKind, ControllerStatus,
                                    CandidateDisposition) for m in e]
cdef list _ENUM_ENCODED = [_py._enc_bytes(m) for m in _ENUM_LIST]
cdef PyObject *_ENUM_MEMBERS[64]
cdef Py_ssize_t _N_ENUMS = len(_ENUM_LIST)
assert _N_ENUMS <= 64
for _i, _m in enumerate(_ENUM_LIST):
    _ENUM_MEMBERS[_i] = <PyObject *>_m

# ------------------------------------------------------------------ canonical encoding

cdef unsigned char *_buf = NULL
cdef Py_ssize_t _len = 0
cdef Py_ssize_t _cap = 0


cdef int _reserve(Py_ssize_t extra) except -1:
    global _buf, _cap
    cdef Py_ssize_t want = _len + extra
    cdef unsigned char *grown
    if want <= _cap:
        return 0
    want = max(want, 2 * _cap, 256)
    grown = <unsigned char *>realloc(_buf, want)
    if grown is NULL:
        raise MemoryError()
    _buf = grown
    _cap = want
    return 0


cdef int _write(const char *data, Py_ssize_t n) except -1:
    global _len
    _reserve(n)
    memcpy(_buf + _len, data, n)
    _len += n
    return 0


cdef int _write_int_raw(long long number) except -1:
    """Append the decimal digits of `number` (the full long long range)."""
    cdef char digits[24]
    cdef int k = 24
    cdef unsigned long long magnitude
    cdef bint negative = number < 0
    if negative:
        magnitude = <unsigned long long>(-(number + 1)) + 1
    else:
        magnitude = <unsigned long long>number
    while True:
        k -= 1
        digits[k] = <char>(48 + magnitude % 10)
        magnitude //= 10
        if magnitude == 0:
            break
    if negative:
        k -= 1
        digits[k] = 45
    return _write(digits + k, 24 - k)


cdef int _write_int(long long number) except -1:
    _write("i", 1)
    _write_int_raw(number)
    return _write(";", 1)


cdef int _write_str(object text) except -1:
    """Encode an exact str as s<len>:<utf-8>; 0 if it needs the general path."""
    global _len
    cdef Py_ssize_t size
    cdef const char *data
    try:
        data = PyUnicode_AsUTF8AndSize(text, &size)
    except UnicodeEncodeError:
        return 0
    _write("s", 1)
    _write_int_raw(size)
    _write(":", 1)
    _write(data, size)
    return 1


cdef int _write_value(object value) except -1:
    """Append the canonical encoding of `value`; 0 when only the general path can."""
    cdef type kind = type(value)
    cdef int overflow = 0
    cdef long long number
    cdef Py_ssize_t i
    if kind is str:
        return _write_str(value)
    if value is None:
        _write("N", 1)
        return 1
    if kind is int:
        number = PyLong_AsLongLongAndOverflow(value, &overflow)
        if overflow:
            return 0
        _write_int(number)
        return 1
    if kind is bool:
        _write("T" if value else "F", 1)
        return 1
    for i in range(_N_ENUMS):
        if _ENUM_MEMBERS[i] == <PyObject *>value:
            encoded = <bytes>_ENUM_ENCODED[i]
            _write(PyBytes_AS_STRING(encoded), PyBytes_GET_SIZE(encoded))
            return 1
    if kind is T_EVIDENCE:
        _write("E", 1)
        return _write_value(_get(value, N_EVIDENCE))
    if kind is T_COMPUTE:
        _write("K", 1)
        return _write_value(_get(value, N_STEP))
    if kind is frozenset and len(value) == 0:
        _write("{0:}", 4)
        return 1
    return 0


cdef bint _buffer_hashes_to(object claimed) except -1:
    cdef unsigned char out[32]
    if type(claimed) is not bytes or PyBytes_GET_SIZE(claimed) != 32:
        return False
    four_blake2b_256(_buf, _len, out)
    return memcmp(out, PyBytes_AS_STRING(claimed), 32) == 0


cdef bint _evaluation_digest_is(object claimed, bytes prev, object verdict, object payload,
                                object arcs, object action, object index) except -1:
    global _len
    _len = 0
    _write("R", 1)
    _write(PyBytes_AS_STRING(prev), PyBytes_GET_SIZE(prev))
    _write("V", 1)
    if (_write_value(verdict) and _write_value(payload) and _write_value(arcs)
            and _write_value(action) and _write_value(index)):
        return _buffer_hashes_to(claimed)
    return _evaluation_digest(prev, verdict, payload, arcs, action, index) == claimed


cdef bytes _hash_buffer():
    cdef unsigned char out[32]
    four_blake2b_256(_buf, _len, out)
    return PyBytes_FromStringAndSize(<char *>out, 32)


cdef bytes _evaluation_digest(bytes prev, object verdict, object payload, object arcs,
                              object action, object index):
    global _len
    _len = 0
    _write("R", 1)
    _write(PyBytes_AS_STRING(prev), PyBytes_GET_SIZE(prev))
    _write("V", 1)
    if (_write_value(verdict) and _write_value(payload) and _write_value(arcs)
            and _write_value(action) and _write_value(index)):
        return _hash_buffer()
    out = [b"R", prev, b"V"]
    for item in (verdict, payload, arcs, action, index):
        _py._enc(item, out)
    return _digest_of(b"".join(out))


cdef bytes _event_digest(bytes prev, object event, object action):
    global _len
    _len = 0
    _write("R", 1)
    _write(PyBytes_AS_STRING(prev), PyBytes_GET_SIZE(prev))
    _write("W", 1)
    if (type(event) is T_EVENT_DATA and _write_value(_get(event, V_KIND))
            and _write_value(_get(event, V_LEASE_ID)) and _write_value(_get(event, V_OUTCOME))
            and _write_value(_get(event, V_DEPENDENCY)) and _write_value(_get(event, V_CLOCK))
            and _write_value(action)):
        return _hash_buffer()
    return _py._event_digest(prev, event, action)


cdef bytes _digest_of(bytes message):
    cdef unsigned char out[32]
    four_blake2b_256(<unsigned char *>PyBytes_AS_STRING(message), PyBytes_GET_SIZE(message), out)
    return PyBytes_FromStringAndSize(<char *>out, 32)


def fingerprint(config):
    """BLAKE2b-256 of the canonical encoding of the config's ten resolved fields."""
    return _py.fingerprint(config)


def genesis(config, state):
    """The digest a trace starting at `state` under `config` chains from."""
    return _py.genesis(config, state)


def receipt_digest(bytes prev not None, receipt):
    """The digest `receipt` must carry when it follows a receipt whose digest is `prev`."""
    if isinstance(receipt, EvaluationReceipt):
        return _evaluation_digest(prev, receipt.verdict, receipt.payload,
                                  receipt.dependency_arcs, receipt.action,
                                  receipt.evaluation_index)
    return _event_digest(prev, receipt.event, receipt.action)


# ------------------------------------------------------------------ rank


cdef object _count(object raw, object alphabet):
    """Members of a set field that belong to `alphabet`; `_Log.count_in` run in C."""
    cdef object log, entry, cumulative, keys
    cdef Py_ssize_t i, n, total
    if type(raw) is not T_PREFIX:
        return _py._count(raw, alphabet)
    log = _get(raw, P_LOG)
    n = _get(raw, P_N)
    counts = log.counts
    entry = counts.get(id(alphabet))
    if entry is None or entry[0] is not alphabet:
        return log.count_in(alphabet, n)  # builds the cache entry exactly as the pure code
    cumulative = <list>entry[2]
    keys = _get(log, G_KEYS)
    i = len(cumulative) - 1
    if i < n:
        total = cumulative[i]
        while i < n:
            if keys[i] in alphabet:
                total += 1
            cumulative.append(total)
            i += 1
    return entry[1] + cumulative[n]


def rank(config, state):
    """rho = |F minus E| + B_G + B_K + B_I (verdict4's formula)."""
    if type(state) is not T_STATE:
        return _py.rank(config, state)
    failures = config.failure_alphabet
    return (len(failures) - _count(_get(state, S_EXCL), failures) + _get(state, S_EB)
            + _get(state, S_CB) + _get(state, S_DB))


def admissible_rank(config, state):
    """A tighter rank: only opportunities that can still be consumed."""
    return _py.admissible_rank(config, state)


# ------------------------------------------------------------------ steps


cdef object _new_evaluation(object before, object verdict, object payload, object arcs,
                            object action, object after, object index, object digest):
    receipt = object.__new__(T_EVAL)
    _put(receipt, R_BEFORE, before)
    _put(receipt, R_VERDICT, verdict)
    _put(receipt, R_PAYLOAD, payload)
    _put(receipt, R_ARCS, arcs)
    _put(receipt, R_ACTION, action)
    _put(receipt, R_AFTER, after)
    _put(receipt, R_INDEX, index)
    _put(receipt, R_DIGEST, digest)
    return receipt


cdef Py_ssize_t S_ALL[13]
S_ALL[:] = [S_EXCL, S_EVID, S_COMP, S_DEPS, S_EB, S_CB, S_DB, S_STATUS, S_DISP, S_COUNT,
            S_CLOCK, S_LEASE, S_HELD]


cdef object _copy_state(object before):
    """A new ControllerState sharing every raw slot value of `before` (no validation)."""
    cdef Py_ssize_t i
    after = object.__new__(T_STATE)
    for i in range(13):
        _put(after, S_ALL[i], _get(before, S_ALL[i]))
    return after


cdef bint _prefix_lacks(object prefix, object key) except -1:
    """`not prefix.contains(key)` for a `_Prefix`, in C."""
    cdef object log = _get(prefix, P_LOG)
    cdef PyObject *position
    if key in _get(log, G_BASE_KEYS):
        return False
    position = PyDict_GetItem(_get(log, G_INDEX), key)
    return position is NULL or not (<object>position < _get(prefix, P_N))


cdef object _fast_transition(object config, object state, object verdict, object payload):
    """(action, after) for a continuing NO / compute MAYBE or a YES; None for the rest."""
    cdef object raw, key, after
    if type(state) is not T_STATE or _get(state, S_STATUS) is not RUNNING:
        return None
    if _get(state, S_LEASE) is not None:
        return None
    if verdict is V_NO and type(payload) is str:
        raw = _get(state, S_EXCL)
        if (type(raw) is not T_PREFIX or payload not in config.failure_alphabet
                or payload not in config.admissible_failures or not _prefix_lacks(raw, payload)):
            return None
        after = _copy_state(state)
        _put(after, S_EXCL, raw.added(payload))
        action = A_EXCLUDE
    elif verdict is V_MAYBE and type(payload) is T_COMPUTE:
        key = _get(payload, N_STEP)
        raw = _get(state, S_COMP)
        if (type(raw) is not T_PREFIX or key not in config.compute_alphabet
                or not _get(state, S_CB) > 0 or not _prefix_lacks(raw, key)):
            return None
        after = _copy_state(state)
        _put(after, S_COMP, raw.added(key))
        _put(after, S_CB, _get(state, S_CB) - 1)
        _put(after, S_DISP, SOURCE_ADMISSIBLE)
        action = A_ADMIT
    elif verdict is V_YES:
        after = _copy_state(state)
        _put(after, S_STATUS, ACCEPTED)
        _put(after, S_DISP, TERMINALLY_ACCEPTED)
        action = A_ACCEPT
    else:
        return None
    if verdict is not V_YES:
        _put(after, S_DISP, None if action is A_EXCLUDE else SOURCE_ADMISSIBLE)
    _put(after, S_COUNT, _get(state, S_COUNT) + 1)
    _put(after, S_HELD, None)
    return action, after


def evaluate(config, state, verdict, payload, arcs, bytes prev not None):
    """One evaluation step from `state`, as a receipt chained to `prev`."""
    fast = _fast_transition(config, state, verdict, payload)
    if fast is None:
        action, after = _py._evaluation_transition(config, state, verdict, payload, arcs)
    else:
        action, after = fast
    index = after.evaluation_count
    digest = _evaluation_digest(prev, verdict, payload, arcs, action, index)
    return _new_evaluation(state, verdict, payload, arcs, action, after, index, digest)


def handle(config, state, event, bytes prev not None):
    """One event step from `state`, as a receipt chained to `prev`."""
    action, after = _py._event_transition(state, event)
    digest = _event_digest(prev, event, action)
    receipt = object.__new__(T_EVENT)
    _put(receipt, E_BEFORE, state)
    _put(receipt, E_EVENT, event)
    _put(receipt, E_ACTION, action)
    _put(receipt, E_AFTER, after)
    _put(receipt, E_DIGEST, digest)
    return receipt


# ------------------------------------------------------------------ audit fast paths


cdef inline bint _same(object a, object b) except -1:
    return a is b or a == b


cdef bint _extends(object old, object new, object key) except -1:
    """Whether set prefix `new` is prefix `old` plus `key`, which `old` lacks (O(1))."""
    cdef object log, keys
    cdef Py_ssize_t n
    if type(old) is not T_PREFIX or type(new) is not T_PREFIX:
        return False
    log = _get(old, P_LOG)
    if _get(new, P_LOG) is not log:
        return False
    n = _get(old, P_N)
    if _get(new, P_N) != n + 1:
        return False
    keys = _get(log, G_KEYS)
    if n >= PyList_GET_SIZE(keys) or not _same(keys[n], key):
        return False
    return key not in _get(log, G_BASE_KEYS)  # positions below n hold other keys


cdef bint _unchanged_scalars(object before, object after) except -1:
    return (_get(after, S_DEPS) is _get(before, S_DEPS)
            and _same(_get(after, S_CLOCK), _get(before, S_CLOCK))
            and _get(after, S_HELD) is None)


cdef class _Alphabets:
    """The config fields the fast paths read, fetched once per audit_feed call."""
    cdef object failures, admissible, evidence, compute, lease_ticks
    cdef bint all_admissible

    def __init__(self, config):
        self.failures = config.failure_alphabet
        self.admissible = config.admissible_failures
        self.evidence = config.evidence_alphabet
        self.compute = config.compute_alphabet
        self.lease_ticks = config.lease_ticks
        self.all_admissible = self.admissible is self.failures


cdef bint _fast_evaluation(_Alphabets config, object receipt, object state, bytes prev) except -1:
    """True when the receipt is a standard step that replays exactly (no errors to report)."""
    cdef object before = _get(receipt, R_BEFORE)
    cdef object after = _get(receipt, R_AFTER)
    cdef object verdict, payload, action, index, claimed, key
    cdef object e0, g0, k0, e1, g1, k1, count
    cdef long long number
    cdef int overflow = 0
    if before is not state or type(before) is not T_STATE or type(after) is not T_STATE:
        return False
    if _get(before, S_STATUS) is not RUNNING or _get(before, S_LEASE) is not None:
        return False
    verdict = _get(receipt, R_VERDICT)
    payload = _get(receipt, R_PAYLOAD)
    action = _get(receipt, R_ACTION)
    index = _get(receipt, R_INDEX)
    count = _get(before, S_COUNT)
    if type(index) is not int or type(count) is not int:
        return False
    number = PyLong_AsLongLongAndOverflow(index, &overflow)
    if overflow or number == LLONG_MIN:
        return False
    if PyLong_AsLongLongAndOverflow(count, &overflow) != number - 1 or overflow:
        return False
    if _get(after, S_COUNT) is not index and _get(after, S_COUNT) != index:
        return False
    arcs = _get(receipt, R_ARCS)
    if type(arcs) is not frozenset:
        return False
    e0 = _get(before, S_EXCL); g0 = _get(before, S_EVID); k0 = _get(before, S_COMP)
    e1 = _get(after, S_EXCL); g1 = _get(after, S_EVID); k1 = _get(after, S_COMP)
    if not _unchanged_scalars(before, after):
        return False
    if verdict is V_NO and action is A_EXCLUDE and type(payload) is str:
        if payload not in config.failures:
            return False
        if not config.all_admissible and payload not in config.admissible:
            return False
        if not (_extends(e0, e1, payload) and g1 is g0 and k1 is k0):
            return False
        if not (_same(_get(after, S_EB), _get(before, S_EB))
                and _same(_get(after, S_CB), _get(before, S_CB))
                and _same(_get(after, S_DB), _get(before, S_DB))
                and _get(after, S_STATUS) is RUNNING and _get(after, S_DISP) is None
                and _get(after, S_LEASE) is None):
            return False
    elif verdict is V_MAYBE and action is A_ADMIT and type(payload) is T_COMPUTE:
        key = _get(payload, N_STEP)
        if type(key) is not str or key not in config.compute:
            return False
        if not (_extends(k0, k1, key) and e1 is e0 and g1 is g0):
            return False
        if not (_get(before, S_CB) > 0 and _get(after, S_CB) == _get(before, S_CB) - 1
                and _same(_get(after, S_EB), _get(before, S_EB))
                and _same(_get(after, S_DB), _get(before, S_DB))
                and _get(after, S_STATUS) is RUNNING
                and _get(after, S_DISP) is SOURCE_ADMISSIBLE
                and _get(after, S_LEASE) is None):
            return False
    elif verdict is V_MAYBE and action is A_GATHER and type(payload) is T_EVIDENCE:
        key = _get(payload, N_EVIDENCE)
        if type(key) is not str or key not in config.evidence:
            return False
        if not (_extends(g0, g1, key) and e1 is e0 and k1 is k0):
            return False
        lease = _get(after, S_LEASE)
        if type(lease) is not T_LEASE:
            return False
        if not (_get(before, S_EB) > 0 and _get(after, S_EB) == _get(before, S_EB) - 1
                and _same(_get(after, S_CB), _get(before, S_CB))
                and _same(_get(after, S_DB), _get(before, S_DB))
                and _get(after, S_STATUS) is RUNNING and _get(after, S_DISP) is None
                and _get(lease, L_KIND) is LEASE_EVIDENCE
                and _same(_get(lease, L_OBLIGATION), key)
                and _get(lease, L_DEADLINE) == _get(before, S_CLOCK) + config.lease_ticks
                and _get(lease, L_ID) == f"evidence:{key}:{index}"):
            return False
    elif verdict is V_YES and action is A_ACCEPT and payload is None:
        if not (e1 is e0 and g1 is g0 and k1 is k0
                and _same(_get(after, S_EB), _get(before, S_EB))
                and _same(_get(after, S_CB), _get(before, S_CB))
                and _same(_get(after, S_DB), _get(before, S_DB))
                and _get(after, S_STATUS) is ACCEPTED
                and _get(after, S_DISP) is TERMINALLY_ACCEPTED
                and _get(after, S_LEASE) is None):
            return False
    else:
        return False
    claimed = _get(receipt, R_DIGEST)
    if type(claimed) is not bytes:
        return False
    return _evaluation_digest_is(claimed, prev, verdict, payload, arcs, action, index)


cdef bint _fast_event(object receipt, object state, bytes prev) except -1:
    """True for an evidence return that replays exactly (the common event)."""
    cdef object before = _get(receipt, E_BEFORE)
    cdef object after = _get(receipt, E_AFTER)
    cdef object event = _get(receipt, E_EVENT)
    cdef object lease, claimed
    if before is not state or type(before) is not T_STATE or type(after) is not T_STATE:
        return False
    if type(event) is not T_EVENT_DATA or _get(event, V_KIND) is not K_EVIDENCE_RETURNED:
        return False
    if _get(receipt, E_ACTION) is not A_REEVALUATE or _get(before, S_STATUS) is not RUNNING:
        return False
    lease = _get(before, S_LEASE)
    if type(lease) is not T_LEASE or _get(lease, L_KIND) is not LEASE_EVIDENCE:
        return False
    if not _same(_get(event, V_LEASE_ID), _get(lease, L_ID)):
        return False
    if not (_get(after, S_EXCL) is _get(before, S_EXCL)
            and _get(after, S_EVID) is _get(before, S_EVID)
            and _get(after, S_COMP) is _get(before, S_COMP)
            and _get(after, S_DEPS) is _get(before, S_DEPS)
            and _same(_get(after, S_EB), _get(before, S_EB))
            and _same(_get(after, S_CB), _get(before, S_CB))
            and _same(_get(after, S_DB), _get(before, S_DB))
            and _get(after, S_STATUS) is RUNNING
            and _get(after, S_DISP) is _get(before, S_DISP)
            and _same(_get(after, S_COUNT), _get(before, S_COUNT))
            and _same(_get(after, S_CLOCK), _get(before, S_CLOCK))
            and _get(after, S_LEASE) is None
            and _get(after, S_HELD) is _get(before, S_HELD)):
        return False
    claimed = _get(receipt, E_DIGEST)
    if type(claimed) is not bytes:
        return False
    return _event_digest(prev, event, A_REEVALUATE) == claimed


def audit_feed(config, cursor, receipts, Py_ssize_t start):
    """Audit `receipts[start:]`, continuing from `cursor` (which it advances)."""
    cdef Py_ssize_t position
    cdef Py_ssize_t evaluations = cursor.evaluations
    cdef object state = cursor.state
    cdef object prev = cursor.prev
    cdef object receipt
    cdef type kind
    cdef _Alphabets alphabets = _Alphabets(config)
    cdef bint is_list = isinstance(receipts, list)
    position = start
    while position < (PyList_GET_SIZE(receipts) if is_list else len(receipts)):
        receipt = receipts[position]
        kind = type(receipt)
        if prev is not None and kind is T_EVAL and _fast_evaluation(alphabets, receipt, state, prev):
            evaluations += 1
            prev = _get(receipt, R_DIGEST)
            state = _get(receipt, R_AFTER)
        elif prev is not None and kind is T_EVENT and _fast_event(receipt, state, prev):
            prev = _get(receipt, E_DIGEST)
            state = _get(receipt, E_AFTER)
        else:
            cursor.evaluations = evaluations
            cursor.state = state
            cursor.prev = prev
            _py._audit_one(config, cursor, receipt, position + 1)
            evaluations = cursor.evaluations
            state = cursor.state
            prev = cursor.prev
        position += 1
    cursor.evaluations = evaluations
    cursor.state = state
    cursor.prev = prev
    cursor.position = max(cursor.position, len(receipts))


def audit_result(config, cursor, head):
    """The AuditResult for everything fed to `cursor` so far (the cursor is unchanged)."""
    return _py.audit_result(config, cursor, head)
