# ------------------------------------------------------------------ audit
#
# Receipts are replayed in order against a running state and digest: each evaluation
# that follows the running state is replayed by the C transition (`_evaluation_replays`)
# and compared by the states' own equality; any other receipt, and every one that would
# report an error, goes to the reference `_audit_one`, which writes the messages.


@cython.auto_pickle(False)  # internal; no pickling helpers in the module namespace
cdef class _Replay:
    """One audit_feed call: the running state, digest and evaluation count (written to
    the cursor around every call to the reference `_audit_one`)."""

    cdef object config, cursor
    cdef object state, prev, start_prev
    cdef object evaluations
    cdef Py_ssize_t fast  # evaluations accepted in C since the cursor was last written
    cdef bint start_known

    def __cinit__(self, config, cursor):
        self.config = config
        self.cursor = cursor
        self.state = cursor.state
        self.prev = cursor.prev
        self.evaluations = cursor.evaluations

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

    cdef int rebase(self, object receipt) except -1:
        """Continue from the receipt's before-state when it equals the running state
        (the reference audit accepts it and replays from it): a trace is usually
        audited from a fresh initial state equal to the one it started from."""
        cdef PyObject *before
        if type(receipt) is not T_EVAL:
            return 0
        before = _raw(<PyObject *>receipt, R_BEFORE)
        if before is NULL or before == <PyObject *>self.state:
            return 0
        try:
            if <object>before == self.state:
                self.state = <object>before
        except (TypeError, ValueError, AttributeError):
            pass  # the reference audit compares them itself
        return 0

    cdef int general(self, object receipt, Py_ssize_t position) except -1:
        cdef object prev = self.chain()
        if prev is not None and type(receipt) is T_EVAL and _evaluation_replays(
                self.config, receipt, self.state, prev):
            self.fast += 1
            self.state = _get(receipt, R_AFTER)
            self.prev = _get(receipt, R_DIGEST)
        else:
            self.slow(receipt, position)
        return 0

    cdef int slow(self, object receipt, Py_ssize_t position) except -1:
        """The reference audit of one receipt, from the running state."""
        cursor = self.cursor
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
        for position in range(start, end):
            receipt = receipts[position]
            self.rebase(receipt)
            self.general(receipt, position)
        cursor = self.cursor
        cursor.evaluations = self.evaluations + self.fast
        cursor.state = self.state
        cursor.prev = self.prev
        return 0


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
    # the shapes `_replay_payload` leaves unchanged, of the two verdicts translated
    if not ((verdict == O_NO and _is(payload, P_STR))
            or (verdict == <PyObject *>V_YES and payload == O_NONE)):
        return False
    action = <object>_raw(r, R_ACTION)
    index = <object>_raw(r, R_INDEX)
    arcs = <object>_raw(r, R_ARCS)
    try:  # the reference audit reports these errors
        if _canonical.evaluation_digest(prev, <object>verdict, <object>payload, arcs, action,
                                        index) != <object>claimed:
            return False
        step = _evaluation_transition(config, state, <object>verdict, <object>payload, arcs)
        if step is None or (<tuple>step)[0] is not action:
            return False
        replayed = (<tuple>step)[1]
        return index == replayed.evaluation_count and <object>_raw(r, R_AFTER) == replayed
    except (TypeError, ValueError, AttributeError):
        return False
