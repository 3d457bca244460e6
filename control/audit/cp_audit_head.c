/* cp_audit_head.c - the audit log's chain-head file: encode, decode, read,
 * synchronous write. Contract and layout: cp_audit_head.h. Any thread. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "cp_audit_head.h"
#include "fg/wire.h"

static const uint8_t magic[4] = { 'F', 'G', 'A', 'H' };

void cp_audit_head_encode(const struct cp_audit_head *h, uint8_t out[CP_AUDIT_HEAD_LEN])
{
	memset(out, 0, CP_AUDIT_HEAD_LEN);
	memcpy(out, magic, 4);
	fg_put_le32(out + 4, 1);
	fg_put_le64(out + 8, h->seq);
	fg_put_le64(out + 16, h->end_off);
	fg_put_le32(out + 24, h->file_index);
	fg_put_le32(out + 28, h->gen);
	memcpy(out + 32, h->hash, FG_AUDIT_HASH_LEN);
	fg_put_le64(out + 64, XXH3_64bits(out, 64));
}

bool cp_audit_head_decode(const uint8_t in[CP_AUDIT_HEAD_LEN], struct cp_audit_head *h)
{
	if (memcmp(in, magic, 4) != 0 || fg_le32(in + 4) != 1 || fg_le64(in + 64) != XXH3_64bits(in, 64))
		return false;
	h->seq = fg_le64(in + 8);
	h->end_off = fg_le64(in + 16);
	h->file_index = fg_le32(in + 24);
	h->gen = fg_le32(in + 28);
	memcpy(h->hash, in + 32, FG_AUDIT_HASH_LEN);
	return true;
}

int cp_audit_head_read(int fd, struct cp_audit_head *h, unsigned *slot)
{
	struct stat sb;
	if (fstat(fd, &sb) < 0)
		return -errno;
	if (sb.st_size == 0)
		return 0;
	uint8_t buf[CP_AUDIT_HEAD_SLOT_OFF + CP_AUDIT_HEAD_LEN];
	memset(buf, 0, sizeof(buf));
	ssize_t n;
	do
		n = pread(fd, buf, sizeof(buf), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	struct cp_audit_head s[2];
	bool ok0 = cp_audit_head_decode(buf, &s[0]);
	bool ok1 = cp_audit_head_decode(buf + CP_AUDIT_HEAD_SLOT_OFF, &s[1]);
	if (!ok0 && !ok1)
		return -EBADMSG;
	unsigned k = !ok0 ? 1 : !ok1 ? 0 : (int32_t)(s[1].gen - s[0].gen) > 0 ? 1 : 0;
	*h = s[k];
	if (slot)
		*slot = k;
	return 1;
}

int cp_audit_head_write_sync(int fd, unsigned slot, const struct cp_audit_head *h)
{
	uint8_t buf[CP_AUDIT_HEAD_LEN];
	cp_audit_head_encode(h, buf);
	size_t done = 0;
	while (done < sizeof(buf)) {
		ssize_t w = pwrite(fd, buf + done, sizeof(buf) - done,
				   (off_t)(slot ? CP_AUDIT_HEAD_SLOT_OFF : 0) + (off_t)done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		done += (size_t)w;
	}
	return fdatasync(fd) < 0 ? -errno : 0;
}

int cp_audit_head_name(const char *log_path, char *out, size_t cap)
{
	int k = snprintf(out, cap, "%s%s", log_path, CP_AUDIT_HEAD_SUFFIX);
	return k < 0 || (size_t)k >= cap ? -ENAMETOOLONG : 0;
}
