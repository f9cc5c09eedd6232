/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Copies between scatter lists from the guest and flat buffers. */
#ifndef PVO_IOV_H
#define PVO_IOV_H

#include <stddef.h>
#include <string.h>
#include <sys/uio.h>

static inline size_t iov_size(const struct iovec *iov, unsigned int n)
{
	size_t total = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		total += iov[i].iov_len;
	return total;
}

/* Copy up to len bytes out of iov; returns the bytes copied. */
static inline size_t iov_to_buf_len(const struct iovec *iov, unsigned int n,
				    void *buf, size_t len)
{
	size_t done = 0, k;
	unsigned int i;

	for (i = 0; i < n && done < len; i++) {
		k = iov[i].iov_len < len - done ? iov[i].iov_len : len - done;
		memcpy((char *)buf + done, iov[i].iov_base, k);
		done += k;
	}
	return done;
}

/* Copy up to len bytes into iov; returns the bytes copied. */
static inline size_t iov_from_buf_len(const struct iovec *iov, unsigned int n,
				      const void *buf, size_t len)
{
	size_t done = 0, k;
	unsigned int i;

	for (i = 0; i < n && done < len; i++) {
		k = iov[i].iov_len < len - done ? iov[i].iov_len : len - done;
		memcpy(iov[i].iov_base, (const char *)buf + done, k);
		done += k;
	}
	return done;
}

#endif
