package sketch

// smallest finds, among ids 0 to n-1, the one whose count is smallest
// (the lowest id among equals), for Space-Saving's take-over, in a
// logarithm of n rather than a scan: a min-heap of ids on the counts they
// had when last looked at. Counts only grow between the changes that
// reset it (a slot expiring, a compaction, a merge, a new id), so an id's
// count now is at least the one the heap holds: the top is the smallest
// once its count is found unchanged, and an id whose count grew is
// pushed down with its count now. Each push down pays for events counted
// since the last one, so the work is proportional to the events.
type smallest struct {
	heap []int32  // ids, a min-heap on (at[id], id)
	at   []uint64 // by id: its count when last looked at
}

// reset drops the heap; the next min builds it again.
func (h *smallest) reset() { h.heap = h.heap[:0] }

// min returns the id of the smallest count among ids 0 to n-1, count
// telling each id's count now.
func (h *smallest) min(n int, count func(int32) uint64) int32 {
	if len(h.heap) != n {
		h.heap = h.heap[:0]
		h.at = h.at[:0]
		for id := range int32(n) {
			h.heap = append(h.heap, id)
			h.at = append(h.at, count(id))
		}
		for i := n/2 - 1; i >= 0; i-- {
			h.down(i)
		}
	}
	for {
		top := h.heap[0]
		c := count(top)
		if c == h.at[top] {
			return top
		}
		h.at[top] = c
		h.down(0)
	}
}

// update sets the count of id, the top of the heap (the one min
// returned), to c, at least the count it had.
func (h *smallest) update(id int32, c uint64) {
	if len(h.heap) == 0 || h.heap[0] != id {
		h.reset()
		return
	}
	h.at[id] = c
	h.down(0)
}

func (h *smallest) less(i, j int) bool {
	a, b := h.heap[i], h.heap[j]
	return h.at[a] < h.at[b] || (h.at[a] == h.at[b] && a < b)
}

func (h *smallest) down(i int) {
	n := len(h.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.heap[i], h.heap[m] = h.heap[m], h.heap[i]
		i = m
	}
}
