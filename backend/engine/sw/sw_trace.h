/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The requester's run (req.c) and the completer (comp.c) are state
 * machines, as in Linux rxe: a loop whose states are named here, so that
 * each transition can be logged.
 *
 * The trace is compiled in with PVO_TRACE (configure with
 * -Dc_args=-DPVO_TRACE) and printed with -v; in other builds
 * pvo_sw_trace() is dead code the compiler drops (its arguments are
 * still type-checked), so the data path pays nothing for it.
 */
#ifndef PVO_SW_TRACE_H
#define PVO_SW_TRACE_H

#include "log.h"

enum pvo_req_state {
	PVO_REQST_NEXT,	  /* pick the next step of the run */
	PVO_REQST_RESEND, /* the promoted WQE again, after a go-back-N */
	PVO_REQST_AHEAD,  /* a WQE behind the active one, if allowed */
	PVO_REQST_FETCH,  /* the next WQE off the SQ */
	PVO_REQST_SEND,	  /* the fetched WQE, as a message */
	PVO_REQST_SLICE,  /* the active WQE's next slice */
	PVO_REQST_FLUSH,  /* the QP is in error: flush the SQ */
	PVO_REQST_YIELD,  /* the run's budget is used: go on later */
	PVO_REQST_DONE,
	PVO_REQST_NSTATES
};

enum pvo_comp_state {
	PVO_COMPST_GET_WQE,   /* the active WQE the answer is about */
	PVO_COMPST_CHECK_PSN, /* an ACK / NAK names a PSN in flight */
	PVO_COMPST_IMPLIED,   /* it is about a later WQE: this one is done */
	PVO_COMPST_CHECK_ACK, /* what the answer says */
	PVO_COMPST_READ,      /* READ response data into the WQE */
	PVO_COMPST_ATOMIC,    /* an atomic's original value into the WQE */
	PVO_COMPST_PROGRESS,  /* part acknowledged: the timeout restarts */
	PVO_COMPST_SEND_MORE, /* the window moved: send what it allows */
	PVO_COMPST_COMP_WQE,  /* complete the active WQE */
	PVO_COMPST_RNR_RETRY, /* RNR NAK: back off, or give up */
	PVO_COMPST_TIMEOUT,   /* the requester's timer fired */
	PVO_COMPST_RETRY,     /* ACK timeout: retry, or give up */
	PVO_COMPST_LOSS,      /* a packet was lost: the window halves */
	PVO_COMPST_RESEND,    /* go back to the responder's PSN, now */
	PVO_COMPST_WAIT_ACK,  /* sent: the answer may take a timeout */
	PVO_COMPST_DROP,      /* out of sequence: counted and dropped */
	PVO_COMPST_DONE,
	PVO_COMPST_NSTATES
};

/* "FETCH", "CHECK_PSN", ...; "?" for a value out of range. */
const char *pvo_req_state_name(enum pvo_req_state s);
const char *pvo_comp_state_name(enum pvo_comp_state s);

#ifdef PVO_TRACE
#define PVO_TRACE_ON 1
#else
#define PVO_TRACE_ON 0
#endif

/* A line about qp (needs vm.h); fmt is a string literal. */
#define pvo_sw_trace(qp, fmt, ...)                                      \
	do {                                                            \
		if (PVO_TRACE_ON && pvo_verbose)                        \
			pvo_log(pvo_vm_name((qp)->vm), "QP 0x%x: " fmt, \
				(qp)->qpn, __VA_ARGS__);                \
	} while (0)

#endif
