// SPDX-License-Identifier: GPL-2.0-or-later
/* Event queue; see event.h. */
#include <endian.h>
#include <string.h>

#include "event.h"
#include "vm.h"

static enum pvo_event_obj obj_of(uint32_t type)
{
	switch (type) {
	case PVO_EV_CQ_COMP:
	case PVO_EV_CQ_ERR:
		return PVO_EVOBJ_CQ;
	case PVO_EV_SRQ_LIMIT:
		return PVO_EVOBJ_SRQ;
	case PVO_EV_PORT_ACTIVE:
	case PVO_EV_PORT_ERR:
	case PVO_EV_DEVICE_FATAL:
		return PVO_EVOBJ_PORT;
	default:
		return PVO_EVOBJ_QP;
	}
}

void pvo_event_flush(struct pvo_vm *vm)
{
	const struct pvo_vm_queues *vq = vm->queues;
	struct pvo_event_queue *q = &vm->events;
	bool pushed = false;
	int put;

	/* not served (yet): events wait, as for a queue not started */
	if (!vq)
		return;
	while (q->count) {
		put = vq->put(vm, PVO_VQ_EVENT, &q->pending[q->head],
			      sizeof(struct pvo_event));
		if (!put)
			break;
		pushed = true;
		/* A buffer too small for an event is a driver bug: it went
		 * back empty, and the event waits for the next one. */
		if (put < 0) {
			pvo_vm_warn(vm,
				    "event buffer smaller than %zu bytes: "
				    "fix the driver's event queue",
				    sizeof(struct pvo_event));
			continue;
		}
		q->head = (q->head + 1) % PVO_EVENT_PENDING_MAX;
		q->count--;
		q->posted++;
	}
	if (pushed)
		vq->notify(vm, PVO_VQ_EVENT);
}

void pvo_event_post(struct pvo_vm *vm, uint32_t type, uint32_t handle)
{
	struct pvo_event_queue *q = &vm->events;
	struct pvo_event *e;

	if (q->count == PVO_EVENT_PENDING_MAX) {
		q->dropped++;
		pvo_vm_warn(vm,
			    "dropped event %u for handle 0x%x: %u events "
			    "wait for buffers (is the guest driver "
			    "posting event buffers?)",
			    type, handle, q->count);
		return;
	}
	e = &q->pending[(q->head + q->count) % PVO_EVENT_PENDING_MAX];
	memset(e, 0, sizeof(*e));
	e->type = htole32(type);
	e->handle = htole32(handle);
	q->count++;
	pvo_event_flush(vm);
}

void pvo_event_purge(struct pvo_vm *vm, enum pvo_event_obj obj, uint32_t handle)
{
	struct pvo_event_queue *q = &vm->events;
	uint32_t i, kept = 0;

	/* Compact in place, keeping the order. */
	for (i = 0; i < q->count; i++) {
		struct pvo_event e =
		    q->pending[(q->head + i) % PVO_EVENT_PENDING_MAX];

		if (obj_of(le32toh(e.type)) == obj &&
		    le32toh(e.handle) == handle)
			continue;
		q->pending[(q->head + kept) % PVO_EVENT_PENDING_MAX] = e;
		kept++;
	}
	q->count = kept;
}

void pvo_event_reset(struct pvo_vm *vm)
{
	vm->events.head = 0;
	vm->events.count = 0;
}
