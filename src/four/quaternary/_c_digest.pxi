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


cdef void _shrink() noexcept:
    """Free the buffer after a large message (a fingerprint of a large alphabet), so
    it does not stay allocated for the life of the process."""
    global _buf, _cap, _len
    if _cap > 65536:
        free(_buf)
        _buf = NULL
        _cap = 0
        _len = 0


cdef int _write(const char *data, Py_ssize_t n) except -1:
    global _len
    _reserve(n)
    memcpy(_buf + _len, data, n)
    _len += n
    return 0


cdef inline unsigned char *_digits(unsigned char *out, long long number) noexcept nogil:
    """Write the decimal digits of `number` (the full long long range) at `out`."""
    cdef unsigned char scratch[24]
    cdef int k = 24
    cdef unsigned long long magnitude
    cdef bint negative = number < 0
    if negative:
        magnitude = <unsigned long long>(-(number + 1)) + 1
    else:
        magnitude = <unsigned long long>number
    while True:
        k -= 1
        scratch[k] = <unsigned char>(48 + magnitude % 10)
        magnitude //= 10
        if magnitude == 0:
            break
    if negative:
        k -= 1
        scratch[k] = 45
    memcpy(out, scratch + k, 24 - k)
    return out + (24 - k)


cdef int _write_int_raw(long long number) except -1:
    global _len
    _reserve(24)
    _len = FOUR_SPAN(_digits(_buf + _len, number), _buf)
    return 0


cdef int _write_int(long long number) except -1:
    _write("i", 1)
    _write_int_raw(number)
    return _write(";", 1)


cdef int _write_str(object text) except -1:
    """Encode an exact str as s<len>:<utf-8>; 0 if it needs the general path (surrogates)."""
    cdef Py_ssize_t size
    cdef const char *data = four_utf8(<PyObject *>text, &size)
    if data is NULL:
        PyErr_Clear()
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
    if kind is T_EVIDENCE and _raw(<PyObject *>value, N_EVIDENCE) is not NULL:
        _write("E", 1)
        return _write_value(_get(value, N_EVIDENCE))
    if kind is T_COMPUTE and _raw(<PyObject *>value, N_STEP) is not NULL:
        _write("K", 1)
        return _write_value(_get(value, N_STEP))
    if kind is frozenset and len(value) == 0:
        _write("{0:}", 4)
        return 1
    return 0


ctypedef struct _Span:
    const unsigned char *data
    size_t size


cdef int _span_order(const void *a, const void *b) noexcept nogil:
    """bytes ordering: the common prefix, then the shorter first."""
    cdef const _Span *x = <const _Span *>a
    cdef const _Span *y = <const _Span *>b
    cdef size_t n = x.size if x.size < y.size else y.size
    cdef int order = memcmp(x.data, y.data, n)
    if order != 0:
        return order
    return (x.size > y.size) - (x.size < y.size)


cdef int _write_str_set(object values) except -1:
    """Append the encoding of a frozenset of exact strs: the sorted item encodings,
    sorted in C; 0 (nothing written) when an item needs the general path."""
    cdef Py_ssize_t count = len(values)
    cdef Py_ssize_t total = 0, size, i = 0
    cdef size_t length
    cdef const char *data
    cdef _Span *spans
    cdef unsigned char *encoded = NULL
    cdef unsigned char *at
    if count == 0:
        _write("{0:}", 4)
        return 1
    spans = <_Span *>malloc(count * sizeof(_Span))
    if spans is NULL:
        raise MemoryError()
    try:
        for item in values:  # first pass: the utf-8 of every item
            if type(item) is not str or i >= count:
                return 0
            data = four_utf8(<PyObject *>item, &size)
            if data is NULL:
                PyErr_Clear()
                return 0
            spans[i].data = <const unsigned char *>data
            spans[i].size = <size_t>size
            total += size + 24
            i += 1
        if i != count:
            return 0
        encoded = <unsigned char *>malloc(total)
        if encoded is NULL:
            raise MemoryError()
        at = encoded
        for i in range(count):  # second pass: s<len>:<utf-8>, spans now over the encodings
            length = spans[i].size
            data = <const char *>spans[i].data
            spans[i].data = at
            at[0] = 115  # "s"
            at = _digits(at + 1, <long long>length)
            at[0] = 58  # ":"
            memcpy(at + 1, data, length)
            at += 1 + length
            spans[i].size = <size_t>FOUR_SPAN(at, spans[i].data)
        qsort(spans, count, sizeof(_Span), _span_order)
        _write("{", 1)
        _write_int_raw(count)
        _write(":", 1)
        for i in range(count):
            _write(<const char *>spans[i].data, spans[i].size)
        _write("}", 1)
        return 1
    finally:
        free(spans)
        free(encoded)


cdef bytes _hash_buffer():
    cdef unsigned char out[32]
    four_blake2b_256(_buf, _len, out)
    return PyBytes_FromStringAndSize(<char *>out, 32)


cdef bint _buffer_hashes_to(object claimed) except -1:
    cdef unsigned char out[32]
    if type(claimed) is not bytes or PyBytes_GET_SIZE(claimed) != 32:
        return False
    four_blake2b_256(_buf, _len, out)
    return memcmp(out, PyBytes_AS_STRING(claimed), 32) == 0


cdef bint _write_evaluation(bytes prev, object verdict, object payload, object arcs,
                            object action, object index) except -1:
    """Fill the buffer with the message of an evaluation receipt; False if it needs the
    general path."""
    global _len
    _len = 0
    _write("R", 1)
    _write(PyBytes_AS_STRING(prev), PyBytes_GET_SIZE(prev))
    _write("V", 1)
    return (_write_value(verdict) and _write_value(payload) and _write_value(arcs)
            and _write_value(action) and _write_value(index))


cdef bytes _evaluation_digest(bytes prev, object verdict, object payload, object arcs,
                              object action, object index):
    if _write_evaluation(prev, verdict, payload, arcs, action, index):
        return _hash_buffer()
    return _py._evaluation_digest(prev, verdict, payload, arcs, action, index)


cdef bint _evaluation_digest_is(object claimed, bytes prev, object verdict, object payload,
                                object arcs, object action, object index) except -1:
    if _write_evaluation(prev, verdict, payload, arcs, action, index):
        return _buffer_hashes_to(claimed)
    return _py._evaluation_digest(prev, verdict, payload, arcs, action, index) == claimed


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


cdef bint _config_complete(object config) noexcept:
    cdef Py_ssize_t offset
    for offset in (Q_FAILURES, Q_EVIDENCE, Q_COMPUTE, Q_DEPENDENCY, Q_EB, Q_CB, Q_DB,
                   Q_ADMISSIBLE, Q_ADMISSIBLE_DEPS, Q_TICKS):
        if _raw(<PyObject *>config, offset) is NULL:
            return False
    return True


cdef bint _write_config(object config) except -1:
    """Fill the buffer with the message `_accounting_py._fingerprint` hashes; False if
    a field needs the general path."""
    global _len
    cdef object value
    _len = 0
    _write("C(", 2)
    for offset in (Q_FAILURES, Q_EVIDENCE, Q_COMPUTE, Q_DEPENDENCY):
        value = _get(config, offset)
        if type(value) is not frozenset or not _write_str_set(value):
            return False
    for offset in (Q_EB, Q_CB, Q_DB):
        if not _write_value(_get(config, offset)):
            return False
    for offset in (Q_ADMISSIBLE, Q_ADMISSIBLE_DEPS):
        value = _get(config, offset)
        if value is None:
            value = frozenset()
        if type(value) is not frozenset or not _write_str_set(value):
            return False
    if not _write_value(_get(config, Q_TICKS)):
        return False
    _write(")", 1)
    return True


cdef bytes _fingerprint(object config):
    """The reference `_fingerprint`, with the alphabets encoded and sorted in C."""
    try:
        if _write_config(config):
            return _hash_buffer()
    finally:
        _shrink()
    return _py._fingerprint(config)
