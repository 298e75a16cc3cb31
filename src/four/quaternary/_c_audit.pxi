# ------------------------------------------------------------------ audit
#
# Receipts are replayed in order against a running state and digest. A continuing NO
# is checked in place (`_exclusion_message`) and its digest message staged in one of
# four lanes; the lanes are hashed side by side (the receipts claim their digests,
# so the messages are known before any is checked) and then accepted in order. Any
# other receipt first flushes the lanes, then is replayed by the C transitions
# (`_evaluation_replays`, `_event_replays`) or, failing that, by the reference
# `_audit_one`, which writes the error messages. A staged receipt whose digest does
# not match also goes to `_audit_one`, with the running state it was staged against.

cdef enum:
    _AHEAD = 12  # receipts between prefetching an alphabet slot and looking it up
    _LANES = 4  # continuing NOs whose digests are hashed side by side
    _BLOCK = 128  # a lane holds a message of at most one BLAKE2b block


cdef struct _Lane:
    PyObject *receipt  # owned references, released by flush
    PyObject *before
    PyObject *prev
    PyObject *log
    Py_ssize_t n
    Py_ssize_t position


cdef bytes _NO_CODE = _py._enc_bytes(V_NO)
cdef bytes _EXCLUDE_TAIL = b"{0:}" + _py._enc_bytes(A_EXCLUDE) + b"i"


cdef inline bint _same_int(PyObject *a, PyObject *b) except -1:
    """a == b for two exact ints (the same object is equal to itself)."""
    if not (_is(a, P_INT) and _is(b, P_INT)):
        return False
    return a == b or PyObject_RichCompareBool(<object>a, <object>b, Py_EQ)


cdef inline bint _kept(PyObject *after, PyObject *before, Py_ssize_t offset) noexcept:
    cdef PyObject *value = _raw(before, offset)
    return value is not NULL and _raw(after, offset) == value


cdef Py_ssize_t _exclusion_message(_Replay r, PyObject *receipt, PyObject *state,
                                   PyObject *prev, _Lane *lane) except -2:
    """When `receipt` is a continuing NO from `state` (EXCLUDE_RETRY) that replays
    exactly, write the message its digest hashes into the buffer, note the exclusion
    log and position in `lane`, and return the message length; -1 otherwise. No
    object is created. It checks what the reference replay would: one new exclusion,
    in the alphabets and not seen before (keys of a log never repeat), and the rest of
    the state carried over."""
    global _len
    cdef PyObject *before = _raw(receipt, R_BEFORE)
    cdef PyObject *after = _raw(receipt, R_AFTER)
    cdef PyObject *payload = _raw(receipt, R_PAYLOAD)
    cdef PyObject *arcs = _raw(receipt, R_ARCS)
    cdef PyObject *claimed = _raw(receipt, R_DIGEST)
    cdef PyObject *old
    cdef PyObject *new
    cdef PyObject *log
    cdef PyObject *keys
    cdef PyObject *key
    cdef PyObject *base
    cdef long long index, count, n
    cdef const char *text
    cdef Py_ssize_t size, plen
    cdef unsigned char *at
    if before != state or FOUR_TYPE(before) != P_STATE or not _is(after, P_STATE):
        return -1
    if (_raw(receipt, R_VERDICT) != O_NO or _raw(receipt, R_ACTION) != O_EXCLUDE
            or not _is(payload, P_STR) or not _is(arcs, P_FROZENSET)
            or PySet_GET_SIZE(<object>arcs) != 0 or not _is(claimed, P_BYTES)
            or PyBytes_GET_SIZE(<object>claimed) != 32 or not _is(prev, P_BYTES)):
        return -1
    if _raw(before, S_STATUS) != O_RUNNING or _raw(before, S_LEASE) != O_NONE:
        return -1
    if not (_raw(after, S_STATUS) == O_RUNNING and _raw(after, S_DISP) == O_NONE
            and _raw(after, S_LEASE) == O_NONE and _raw(after, S_HELD) == O_NONE
            and _kept(after, before, S_EVID) and _kept(after, before, S_COMP)
            and _kept(after, before, S_DEPS)
            and _same_int(_raw(after, S_EB), _raw(before, S_EB))
            and _same_int(_raw(after, S_CB), _raw(before, S_CB))
            and _same_int(_raw(after, S_DB), _raw(before, S_DB))
            and _same_int(_raw(after, S_CLOCK), _raw(before, S_CLOCK))):
        return -1
    if FOUR_TYPE(_raw(before, S_DEPS)) != P_RECORD:
        return -1
    # evaluation_index = before.evaluation_count + 1 = after.evaluation_count
    if not (_as_ll(_raw(receipt, R_INDEX), &index) and _as_ll(_raw(before, S_COUNT), &count)):
        return -1
    if count == LLONG_MAX or index != count + 1:
        return -1
    if not _same_int(_raw(after, S_COUNT), _raw(receipt, R_INDEX)):
        return -1
    # the exclusions grow by exactly this reason, in the shared log
    old = _raw(before, S_EXCL)
    new = _raw(after, S_EXCL)
    if not (_is(old, P_PREFIX) and _is(new, P_PREFIX)):
        return -1
    log = _raw(old, P_LOG_SLOT)
    if not _is(log, P_LOG) or _raw(new, P_LOG_SLOT) != log:
        return -1
    if not (_as_ll(_raw(old, P_N), &n) and _as_ll(_raw(new, P_N), &count)):
        return -1
    keys = _raw(log, G_KEYS)
    if n < 0 or count != n + 1 or not _is(keys, P_LIST) or n >= PyList_GET_SIZE(<object>keys):
        return -1
    key = PyList_GET_ITEM(<object>keys, n)
    if key != payload and not (FOUR_TYPE(key) == P_STR and PyObject_RichCompareBool(
            <object>key, <object>payload, Py_EQ)):
        return -1
    base = _raw(log, G_BASE_KEYS)
    if not _is(base, P_FROZENSET) or (PySet_GET_SIZE(<object>base) != 0
                                      and PySet_Contains(<object>base, <object>payload)):
        return -1
    # the reason is in the failure alphabet and admissible
    if not PySet_Contains(r.failures, <object>payload):
        return -1
    if not r.all_admissible and not PySet_Contains(r.admissible, <object>payload):
        return -1
    # the message: R prev V <NO> s<len>:<reason> {0:} <EXCLUDE_RETRY> i<index>;
    text = four_utf8(payload, &size)
    if text is NULL:  # lone surrogates: the general path encodes them
        PyErr_Clear()
        return -1
    plen = PyBytes_GET_SIZE(<object>prev)
    _len = 0
    _reserve(plen + size + 96)
    at = _buf
    at[0] = 82  # "R"
    memcpy(at + 1, PyBytes_AS_STRING(<object>prev), plen)
    at += 1 + plen
    at[0] = 86  # "V"
    memcpy(at + 1, PyBytes_AS_STRING(_NO_CODE), PyBytes_GET_SIZE(_NO_CODE))
    at += 1 + PyBytes_GET_SIZE(_NO_CODE)
    at[0] = 115  # "s"
    at = _digits(at + 1, size)
    at[0] = 58  # ":"
    memcpy(at + 1, text, size)
    at += 1 + size
    memcpy(at, PyBytes_AS_STRING(_EXCLUDE_TAIL), PyBytes_GET_SIZE(_EXCLUDE_TAIL))
    at = _digits(at + PyBytes_GET_SIZE(_EXCLUDE_TAIL), index)
    at[0] = 59  # ";"
    _len = FOUR_SPAN(at + 1, _buf)  # (pointer arithmetic: no overflow check)
    lane.log = log
    lane.n = n
    return _len


@cython.auto_pickle(False)  # internal; no pickling helpers in the module namespace
cdef class _Replay:
    """One audit_feed call: the running state, digest and evaluation count (written to
    the cursor around every call to the reference `_audit_one`), the config fields the
    hot path reads, the staged lanes, and the run of exclusions verified so far (noted
    in the log's membership record, so the final rank does not look them up again)."""

    cdef object config, cursor, failures, admissible
    cdef object state, prev, start_prev
    cdef object evaluations
    cdef Py_ssize_t fast  # evaluations accepted in C since the cursor was last written
    cdef bint hot, all_admissible, start_known
    cdef PySetObject *table
    cdef object run_log
    cdef Py_ssize_t run_start, run_end
    cdef int pending
    cdef _Lane lanes[_LANES]
    cdef uint8_t blocks[_LANES][_BLOCK]
    cdef size_t sizes[_LANES]

    def __cinit__(self, config, cursor):
        self.config = config
        self.cursor = cursor
        self.state = cursor.state
        self.prev = cursor.prev
        self.evaluations = cursor.evaluations
        if type(config) is T_CONFIG:
            self.failures = _get(config, Q_FAILURES)
            self.admissible = _get(config, Q_ADMISSIBLE)
            self.hot = type(self.failures) is frozenset and type(self.admissible) is frozenset
            self.all_admissible = self.admissible is self.failures
        if self.hot:
            self.table = <PySetObject *>self.failures

    def __dealloc__(self):
        self.release(0)

    cdef void release(self, int first) noexcept:
        cdef int j
        for j in range(first, self.pending):
            Py_XDECREF(self.lanes[j].receipt)
            Py_XDECREF(self.lanes[j].before)
            Py_XDECREF(self.lanes[j].prev)
        self.pending = first

    cdef object chain(self):
        """The digest the next receipt chains from: the last one, or for the first
        receipt the genesis of the running state (None if it has none)."""
        if self.prev is not None:
            return self.prev
        if not self.start_known:
            self.start_known = True
            if type(self.state) is T_STATE:
                try:
                    self.start_prev = genesis(self.config, self.state)
                except (TypeError, ValueError, AttributeError):
                    self.start_prev = None  # the reference audit reports it
        return self.start_prev

    cdef void prefetch(self, PyObject *receipt) noexcept:
        """Start loading the alphabet slot a later NO's reason hashes to: the alphabet
        is as large as the trace, so each lookup would otherwise miss the cache."""
        cdef PyObject *payload
        cdef Py_hash_t hashed
        if FOUR_TYPE(receipt) != P_EVAL:
            return
        payload = _raw(receipt, R_PAYLOAD)
        if _is(payload, P_STR):
            hashed = (<PyASCIIObject *>payload).hash
            if hashed != -1:
                FOUR_PREFETCH(&self.table.table[<size_t>hashed & <size_t>self.table.mask])

    cdef bint stage(self, object receipt, Py_ssize_t position) except -1:
        """Take a continuing NO into a lane (or, for a long message, check it now);
        False leaves the receipt to the general paths."""
        cdef object prev = self.chain()
        cdef _Lane *lane = &self.lanes[self.pending]
        cdef Py_ssize_t size
        if prev is None or type(receipt) is not T_EVAL:
            return False
        size = _exclusion_message(self, <PyObject *>receipt, <PyObject *>self.state,
                                  <PyObject *>prev, lane)
        if size < 0:
            return False
        if size > _BLOCK:  # a long reason: hashed alone, after the lanes, in order
            self.flush()
            _exclusion_message(self, <PyObject *>receipt, <PyObject *>self.state,
                               <PyObject *>prev, &self.lanes[0])
            if not _buffer_hashes_to(_get(receipt, R_DIGEST)):
                return False
            self.verified(<object>self.lanes[0].log, self.lanes[0].n)
            self.accept(receipt, R_AFTER, R_DIGEST)
            self.fast += 1
            return True
        memcpy(self.blocks[self.pending], _buf, size)
        self.sizes[self.pending] = size
        lane.position = position
        lane.receipt = <PyObject *>receipt
        lane.before = <PyObject *>self.state
        lane.prev = <PyObject *>prev
        Py_INCREF(receipt)
        Py_INCREF(self.state)
        Py_INCREF(prev)
        self.pending += 1
        self.accept(receipt, R_AFTER, R_DIGEST)  # provisionally: the next check needs it
        if self.pending == _LANES:
            self.flush()
        return True

    cdef int flush(self) except -1:
        """Hash the staged messages and accept the lanes in order; a lane whose digest
        differs goes to the reference audit from the state it was staged against."""
        cdef int count = self.pending, j
        cdef _Lane *lane
        cdef unsigned char digests[_LANES][32]
        if count == 0:
            return 0
        if count == _LANES:
            four_b2_lanes(self.blocks, self.sizes, digests)
        else:
            for j in range(count):
                four_blake2b_256(self.blocks[j], self.sizes[j], digests[j])
        try:
            for j in range(count):
                lane = &self.lanes[j]
                if memcmp(digests[j], PyBytes_AS_STRING(<object>_raw(lane.receipt, R_DIGEST)),
                          32) == 0:
                    self.verified(<object>lane.log, lane.n)
                    self.fast += 1
                    self.accept(<object>lane.receipt, R_AFTER, R_DIGEST)
                else:
                    self.state = <object>lane.before
                    self.prev = <object>lane.prev
                    self.slow(<object>lane.receipt, lane.position)
        finally:
            self.release(0)
        return 0

    cdef inline void accept(self, object receipt, Py_ssize_t after, Py_ssize_t digest):
        self.state = _get(receipt, after)
        self.prev = _get(receipt, digest)

    cdef int rebase(self, object receipt) except -1:
        """Continue from the receipt's before-state when it equals the running state
        (the reference audit accepts it and replays from it): a trace is usually
        audited from a fresh initial state equal to the one it started from."""
        cdef PyObject *before
        cdef type kind = type(receipt)
        if kind is T_EVAL:
            before = _raw(<PyObject *>receipt, R_BEFORE)
        elif kind is T_EVENT:
            before = _raw(<PyObject *>receipt, E_BEFORE)
        else:
            return 0
        if before is NULL or before == <PyObject *>self.state:
            return 0
        try:
            if _states_match(<object>before, self.state):
                self.state = <object>before
        except (TypeError, ValueError, AttributeError):
            pass  # the reference audit compares them itself
        return 0

    cdef int general(self, object receipt, Py_ssize_t position) except -1:
        cdef object prev = self.chain()
        cdef type kind = type(receipt)
        if prev is not None and kind is T_EVAL and _evaluation_replays(
                self.config, receipt, self.state, prev):
            self.fast += 1
            self.accept(receipt, R_AFTER, R_DIGEST)
        elif prev is not None and kind is T_EVENT and _event_replays(receipt, self.state, prev):
            self.accept(receipt, E_AFTER, E_DIGEST)
        else:
            self.slow(receipt, position)
        return 0

    cdef int slow(self, object receipt, Py_ssize_t position) except -1:
        """The reference audit of one receipt, from the running state."""
        cursor = self.cursor
        self.commit()
        cursor.evaluations = self.evaluations + self.fast
        cursor.state = self.state
        cursor.prev = self.prev
        _py._audit_one(self.config, cursor, receipt, position + 1)
        self.evaluations = cursor.evaluations
        self.fast = 0
        self.state = cursor.state
        self.prev = cursor.prev
        return 0

    cdef int feed(self, object receipts, Py_ssize_t start) except -1:
        """Audit receipts[start:len(receipts)] and write the cursor (as the reference
        `audit_feed` does, the length is read once)."""
        cdef Py_ssize_t position, end = len(receipts)
        cdef bint listed = _plain_list(receipts)
        for position in range(start, end):
            if listed and position < PyList_GET_SIZE(receipts):
                if self.hot and position + _AHEAD < PyList_GET_SIZE(receipts):
                    self.prefetch(PyList_GET_ITEM(receipts, position + _AHEAD))
                receipt = <object>PyList_GET_ITEM(receipts, position)
            else:
                receipt = receipts[position]
            self.rebase(receipt)
            if not (self.hot and self.stage(receipt, position)):
                self.flush()
                self.general(receipt, position)
        self.flush()
        self.commit()
        cursor = self.cursor
        cursor.evaluations = self.evaluations + self.fast
        cursor.state = self.state
        cursor.prev = self.prev
        return 0

    cdef int verified(self, object log, Py_ssize_t n) except -1:
        """Note that key n of the exclusion `log` is in the failure alphabet."""
        if log is self.run_log and n == self.run_end:
            self.run_end += 1
            return 0
        self.commit()
        self.run_log = log
        self.run_start = n
        self.run_end = n + 1
        return 0

    cdef int commit(self) except -1:
        """Extend the log's membership record of the failure alphabet by the verified
        run, when the run starts where the record ends."""
        cdef object log = self.run_log
        cdef object entry
        cdef Py_ssize_t checked
        if log is None:
            return 0
        self.run_log = None
        # the keys before the run (usually one, checked by the general path) are
        # checked here: the final rank would look them up anyway
        entry = _count_entry(log, self.failures, self.run_start)
        if entry is None:
            return 0
        checked = _get(entry, C_CHECKED)
        if self.run_start <= checked < self.run_end:
            _put(entry, C_CHECKED, self.run_end)
        return 0


cdef bint _values_match(PyObject *a, PyObject *b) except -1:
    """a == b for a scalar field of a state (ints, strs, None, enum members, leases)
    in the shapes the C transitions produce; False, so the reference decides, else."""
    cdef void *kind
    if a is NULL or b is NULL:
        return False
    kind = FOUR_TYPE(a)
    if a == b:  # equal to themselves (no NaN-like values among these)
        return (kind == P_INT or kind == P_STR or kind == P_LEASE or a == O_NONE
                or a == O_RUNNING or a == <PyObject *>ACCEPTED or a == <PyObject *>HELD
                or a == <PyObject *>SOURCE_ADMISSIBLE or a == <PyObject *>TERMINALLY_ACCEPTED)
    if kind != FOUR_TYPE(b):
        return False
    if kind == P_INT or kind == P_STR:
        return PyObject_RichCompareBool(<object>a, <object>b, Py_EQ)
    if kind == P_LEASE:
        return (_complete_lease(a) and _complete_lease(b) and _raw(a, L_KIND) == _raw(b, L_KIND)
                and _values_match(_raw(a, L_ID), _raw(b, L_ID))
                and _values_match(_raw(a, L_OBLIGATION), _raw(b, L_OBLIGATION))
                and _values_match(_raw(a, L_DEADLINE), _raw(b, L_DEADLINE)))
    return False


cdef bint _sets_equal(PyObject *a, PyObject *b) except -1:
    """`_state._same` for two set fields: prefixes of one log compare by length, other
    pairs (another log, a frozenset) by value."""
    if a is NULL or b is NULL or not (_set_field(a) and _set_field(b)):
        return False
    if a == b:
        return True
    if _is(a, P_PREFIX) and _is(b, P_PREFIX) and _raw(a, P_LOG_SLOT) == _raw(b, P_LOG_SLOT):
        return _same_int(_raw(a, P_N), _raw(b, P_N))
    return _st._same(<object>a, <object>b)


cdef bint _outcomes_equal(PyObject *a, PyObject *b) except -1:
    """`_state._same_outcomes` for two outcome fields (prefixes or tuples of pairs)."""
    if a is NULL or b is NULL:
        return False
    if not ((_is(a, P_PREFIX) or _is(a, P_TUPLE)) and (_is(b, P_PREFIX) or _is(b, P_TUPLE))):
        return False
    if a == b:
        return True
    if _is(a, P_PREFIX) and _is(b, P_PREFIX) and _raw(a, P_LOG_SLOT) == _raw(b, P_LOG_SLOT):
        return _same_int(_raw(a, P_N), _raw(b, P_N))
    return _st._same_outcomes(<object>a, <object>b)


cdef bint _records_equal(PyObject *a, PyObject *b) except -1:
    """DependencyRecord.__eq__ for records in the shapes `_complete_record` admits."""
    if a is NULL or b is NULL or not (_is(a, P_RECORD) and _is(b, P_RECORD)):
        return False
    if a == b:
        return True
    return (_complete_record(a) and _complete_record(b)
            and _sets_equal(_raw(a, D_USED), _raw(b, D_USED))
            and PyObject_RichCompareBool(<object>_raw(a, D_UNRESOLVED),
                                         <object>_raw(b, D_UNRESOLVED), Py_EQ)
            and PyObject_RichCompareBool(<object>_raw(a, D_RELATION),
                                         <object>_raw(b, D_RELATION), Py_EQ)
            and _outcomes_equal(_raw(a, D_OUTCOMES), _raw(b, D_OUTCOMES)))


cdef bint _states_match(object after, object replayed) except -1:
    """after == replayed (ControllerState.__eq__, in its order: scalars, sets, record)
    decided in C; False when unsure, so the reference decides."""
    cdef PyObject *a = <PyObject *>after
    cdef PyObject *b = <PyObject *>replayed
    cdef Py_ssize_t i
    if FOUR_TYPE(a) != P_STATE or FOUR_TYPE(b) != P_STATE:
        return False
    for i in range(4, 13):
        if not _values_match(_raw(a, S_ALL[i]), _raw(b, S_ALL[i])):
            return False
    for i in range(3):
        if not _sets_equal(_raw(a, S_ALL[i]), _raw(b, S_ALL[i])):
            return False
    return _records_equal(_raw(a, S_DEPS), _raw(b, S_DEPS))


cdef bint _evaluation_replays(object config, object receipt, object state,
                              object prev) except -1:
    """True when an evaluation receipt that follows `state` replays exactly through the
    C transition; False hands it to the reference audit."""
    cdef PyObject *r = <PyObject *>receipt
    cdef PyObject *verdict = _raw(r, R_VERDICT)
    cdef PyObject *payload = _raw(r, R_PAYLOAD)
    cdef PyObject *claimed = _raw(r, R_DIGEST)
    if _raw(r, R_BEFORE) != <PyObject *>state or verdict is NULL or payload is NULL:
        return False
    if not _is(claimed, P_BYTES) or not _is(<PyObject *>prev, P_BYTES):
        return False
    for offset in (R_ARCS, R_ACTION, R_AFTER, R_INDEX):
        if _raw(r, offset) is NULL:
            return False
    # `_replay_payload` leaves these shapes unchanged
    if verdict == O_NO or verdict == <PyObject *>V_IFF:
        if not _is(payload, P_STR):
            return False
    elif verdict == <PyObject *>V_YES:
        if payload != O_NONE:
            return False
    elif verdict == <PyObject *>V_MAYBE:
        if not (_is(payload, P_STR) or FOUR_TYPE(payload) == <void *>T_EVIDENCE
                or FOUR_TYPE(payload) == <void *>T_COMPUTE):
            return False
    else:
        return False
    action = <object>_raw(r, R_ACTION)
    index = <object>_raw(r, R_INDEX)
    arcs = <object>_raw(r, R_ARCS)
    try:  # the reference audit reports these errors
        if not _evaluation_digest_is(<object>claimed, prev, <object>verdict, <object>payload,
                                     arcs, action, index):
            return False
        step = _evaluation_transition(config, state, <object>verdict, <object>payload, arcs)
        if step is None or (<tuple>step)[0] is not action:
            return False
        replayed = (<tuple>step)[1]
        return (_values_match(<PyObject *>index, _raw(<PyObject *>replayed, S_COUNT))
                and _states_match(<object>_raw(r, R_AFTER), replayed))
    except (TypeError, ValueError, AttributeError):
        return False


cdef bint _event_replays(object receipt, object state, object prev) except -1:
    """True when an event receipt that follows `state` replays exactly through the C
    transition; False hands it to the reference audit."""
    cdef PyObject *r = <PyObject *>receipt
    cdef PyObject *claimed = _raw(r, E_DIGEST)
    if _raw(r, E_BEFORE) != <PyObject *>state or not _is(claimed, P_BYTES):
        return False
    if not _is(<PyObject *>prev, P_BYTES) or _raw(r, E_ACTION) is NULL or _raw(r, E_AFTER) is NULL:
        return False
    event = <object>_raw(r, E_EVENT) if _raw(r, E_EVENT) is not NULL else None
    if type(event) is not T_EVENT_DATA:
        return False
    action = <object>_raw(r, E_ACTION)
    try:  # the reference audit reports these errors
        if _event_digest(prev, event, action) != <object>claimed:
            return False
        step = _event_transition(state, event)
        if step is None or (<tuple>step)[0] is not action:
            return False
        return _states_match(<object>_raw(r, E_AFTER), (<tuple>step)[1])
    except (TypeError, ValueError, AttributeError):
        return False


cdef bint _plain_list(object receipts):
    """Whether items can be read with PyList_GET_ITEM (a list whose indexing is list's)."""
    if type(receipts) is list:
        return True
    cls = type(receipts)
    return (isinstance(receipts, list) and cls.__getitem__ is list.__getitem__
            and cls.__len__ is list.__len__)
