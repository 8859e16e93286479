package jsonscan

import (
	"errors"
	"fmt"
	"io"
)

// Problems WalkRecords reports to a RecordHandler: the parts of an input
// that are not records.
type Problem uint8

const (
	// BadValue is a value cut short or broken (ErrBroken): not JSON.
	BadValue Problem = iota
	// TooLong is a value over the size limit, skipped whole.
	TooLong
	// NotObject is an element of a record list that is not an object.
	NotObject
	// BadFile is an input that cannot be read on: it ends inside a value
	// or a list, or a list lacks a separator. The walk stops there.
	BadFile
)

// RecordHandler receives what WalkRecords finds. Its methods are called
// from WalkRecords' goroutine, one at a time.
type RecordHandler interface {
	// Record handles the raw bytes of one object, valid during the call
	// only. top is set for an object at the top level of the input or of
	// a top-level array, which may be a container itself (an object with
	// a Records member not written first, an envelope); it is unset for
	// an element of a Records list. An error stops the walk and is
	// returned by WalkRecords.
	Record(raw []byte, top bool) error
	// Bad reports a part of the input that is not a record.
	Bad(p Problem, err error)
}

// WalkRecords cuts r into the records of AWS's record dumps, one at a
// time, for the decoders of whole inputs (CloudTrail files, DynamoDB
// stream records): {"Records":[...]} objects, whose list is walked element
// by element (the object's other members are passed over); JSON arrays of
// objects; and objects one after the other, one per line or
// pretty-printed. A value over max bytes is skipped as TooLong.
//
// What is not a record is reported to h and passed over: a line that is
// not JSON up to its end, an element that is not an object; an input that
// ends inside a value ends the walk as BadFile. The error is h's, or a
// failure of r itself (which the caller may tell apart, e.g. a corrupt
// compressed stream).
func WalkRecords(r io.Reader, max int, h RecordHandler) error {
	w := walker{sc: NewReader(r, max), h: h}
	return w.top()
}

type walker struct {
	sc *Reader
	h  RecordHandler
}

// errStop ends the walk quietly: the problem was reported already.
var errStop = errors.New("stop")

func (w *walker) top() error {
	for {
		c, err := w.sc.PeekByte()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return w.failed(err)
		}
		switch c {
		case '{':
			if n := recordsPrefix(w.sc); n > 0 {
				w.sc.Discard(n)
				err = w.list(false)
				if err == nil {
					err = w.afterRecords()
				}
			} else {
				err = w.element(true)
			}
		case '[':
			w.sc.Discard(1)
			err = w.list(true)
		default:
			w.h.Bad(BadValue, errors.New("not a JSON object or array"))
			w.sc.SkipLine()
		}
		if err == errStop {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// afterRecords passes over the members of a Records object after its list.
func (w *walker) afterRecords() error {
	err := w.sc.SkipRest()
	if errors.Is(err, ErrTruncated) || errors.Is(err, ErrBroken) || errors.Is(err, ErrTooLong) {
		w.h.Bad(BadFile, fmt.Errorf("after Records: %w", err))
		return errStop
	}
	if err != nil {
		return w.failed(err)
	}
	return nil
}

// failed reports an input that ends inside a value and stops; other
// errors are the reader's own and returned.
func (w *walker) failed(err error) error {
	if errors.Is(err, ErrTruncated) {
		w.h.Bad(BadFile, err)
		return errStop
	}
	return err
}

// list walks the elements of a list whose '[' was consumed: the records of
// a Records list (top false) or the objects of a top-level array.
func (w *walker) list(top bool) error {
	for first := true; ; first = false {
		c, err := w.next()
		if err != nil {
			return err
		}
		if c == ']' {
			w.sc.Discard(1)
			return nil
		}
		if !first {
			if c != ',' {
				w.h.Bad(BadFile, fmt.Errorf("expected , or ] between records, found %q", c))
				return errStop
			}
			w.sc.Discard(1)
			if c, err = w.next(); err != nil {
				return err
			}
		}
		if c == '{' {
			err = w.element(top)
		} else {
			err = w.notObject(c)
		}
		if err != nil {
			return err
		}
	}
}

// next returns the next byte inside a list; the input ending there is
// BadFile.
func (w *walker) next() (byte, error) {
	c, err := w.sc.PeekByte()
	if err == io.EOF {
		w.h.Bad(BadFile, ErrTruncated)
		return 0, errStop
	}
	if err != nil {
		return 0, w.failed(err)
	}
	return c, nil
}

// notObject reports an element that is not an object and passes over it.
func (w *walker) notObject(c byte) error {
	w.h.Bad(NotObject, errors.New("record is not a JSON object"))
	if c == '[' {
		if _, err := w.sc.Value(); err != nil && !errors.Is(err, ErrTooLong) && !errors.Is(err, ErrBroken) {
			return w.failed(err)
		}
		return nil
	}
	if err := w.sc.SkipScalar(); err != nil {
		return w.failed(err)
	}
	return nil
}

// element reads one object and hands it to the handler.
func (w *walker) element(top bool) error {
	raw, err := w.sc.Value()
	switch {
	case err == nil:
		return w.h.Record(raw, top)
	case errors.Is(err, ErrTooLong):
		w.h.Bad(TooLong, err)
		return nil
	case errors.Is(err, ErrBroken):
		w.h.Bad(BadValue, err)
		return nil
	}
	return w.failed(err)
}

// recordsPrefix matches `{ "Records" : [` with any white space at the
// reader's position and returns its length, or 0. Only the first bytes are
// looked at: AWS writes the Records key first, and any other layout is
// read as one object.
func recordsPrefix(sc *Reader) int {
	b := sc.Peek(256)
	i := 0
	for _, lit := range []string{"{", `"Records"`, ":", "["} {
		i = Space(b, i)
		if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
			return 0
		}
		i += len(lit)
	}
	return i
}
