/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_demo: the target (see pmv_demo.c): maps the file, accepts the
 * initiator, registers the mapping with FI_RMA_PMEM, sends the region and
 * prints the lines written into it.
 */
#include "pmv_demo.h"

/* ---------------------------------------------------------------- target */

/* Creates the default temporary file, in $TMPDIR or /tmp. */
static void create_temp_file(struct mapped_file *file)
{
	const char *dir = getenv("TMPDIR");

	if (!dir || !*dir)
		dir = "/tmp";
	snprintf(file->path, sizeof(file->path), "%s/pmv_demo.XXXXXX", dir);
	file->fd = mkstemp(file->path);
	file->remove_at_exit = file->fd >= 0;
}

/* Opens (or creates) the file, grows it to REGION_SIZE and maps it shared. */
static int map_region_file(const char *path, struct mapped_file *file)
{
	struct stat st;

	if (path) {
		snprintf(file->path, sizeof(file->path), "%s", path);
		file->fd = open(path, O_RDWR | O_CREAT, 0644);
	} else {
		create_temp_file(file);
	}
	if (file->fd < 0 || fstat(file->fd, &st) ||
	    (st.st_size < REGION_SIZE && ftruncate(file->fd, REGION_SIZE))) {
		complain("preparing %s: %s", file->path, strerror(errno));
		return -FI_EIO;
	}
	/* MAP_SYNC where the file takes it (fsdax): CPU flushes then suffice */
	file->map = mmap(NULL, REGION_SIZE, PROT_READ | PROT_WRITE,
			 MAP_SHARED_VALIDATE | MAP_SYNC, file->fd, 0);
	if (file->map == MAP_FAILED)
		file->map = mmap(NULL, REGION_SIZE, PROT_READ | PROT_WRITE,
				 MAP_SHARED, file->fd, 0);
	if (file->map == MAP_FAILED) {
		file->map = NULL;
		complain("mmap of %s: %s", file->path, strerror(errno));
		return -FI_EIO;
	}
	return 0;
}

static void unmap_region_file(struct mapped_file *file)
{
	if (file->map)
		munmap(file->map, REGION_SIZE);
	if (file->fd >= 0)
		close(file->fd);
	if (file->remove_at_exit)
		unlink(file->path);
}

static int start_listening(const struct fabric_res *res, struct fid_pep **pep)
{
	int ret = check(fi_passive_ep(res->fabric, res->info, pep, NULL),
			"fi_passive_ep");

	if (!ret)
		ret = check(fi_pep_bind(*pep, &res->eq->fid, 0),
			    "binding the passive endpoint to the EQ");
	if (!ret)
		ret = check(fi_listen(*pep), "fi_listen");
	return ret;
}

/* Takes the next connection request and completes it with fi_accept. */
static int accept_initiator(const struct fabric_res *res,
			    struct connection *conn)
{
	struct fi_eq_cm_entry entry;
	int ret, slot;

	ret = wait_for_cm_event(res->eq, FI_CONNREQ,
				"waiting for a connection request", &entry, 0);
	if (ret)
		return ret;
	ret = open_connection(res, entry.info, conn);
	for (slot = 0; !ret && slot < RX_SLOTS; slot++)
		ret = post_recv(conn, slot);
	if (!ret)
		ret = check(fi_accept(conn->ep, NULL, 0), "fi_accept");
	fi_freeinfo(entry.info);
	if (!ret)
		ret = wait_for_cm_event(res->eq, FI_CONNECTED,
					"establishing the connection",
					&entry, 0);
	return ret;
}

/* Sends the initiator the region's base address (or 0), key and length. */
static int send_region(const struct fabric_res *res, struct connection *conn,
		       struct fid_mr *mr, const struct mapped_file *file)
{
	uint64_t addr = has_mr_mode(res, FI_MR_VIRT_ADDR) ?
			(uint64_t) (uintptr_t) file->map : 0;
	struct region_msg msg = {
		.addr = htole64(addr),
		.key = htole64(fi_mr_key(mr)),
		.len = htole64(REGION_SIZE),
		.profile = htole64(res->pmem_ops->mr_profile(mr)),
	};
	int ret = send_message(conn, &msg, sizeof(msg),
			       "sending the region description");

	if (!ret)
		say("region sent to the initiator: address 0x%llx (%s), "
		    "key 0x%llx, %d bytes", (unsigned long long) addr,
		    addr ? "FI_MR_VIRT_ADDR" : "offsets",
		    (unsigned long long) fi_mr_key(mr), REGION_SIZE);
	return ret;
}

/* Receives a text message in `slot`, prints it and copies it to text. */
static int receive_text(struct connection *conn, int slot, const char *what,
			char *text, size_t text_size)
{
	char quoted[4 * MSG_MAX + 1];
	size_t len;
	int ret = receive_message(conn, slot, what, &len);

	if (ret)
		return ret;
	len = len < text_size - 1 ? len : text_size - 1;
	memcpy(text, conn->buf->rx[slot], len);
	text[len] = '\0';
	say("message received: \"%s\"",
	    quote(conn->buf->rx[slot], len, quoted, sizeof(quoted)));
	return 0;
}

/* Prints the line at `offset` of the file, up to a limit. */
static void print_file_line(const struct mapped_file *file, size_t offset,
			    const char *what)
{
	char quoted[4 * FILE_HEAD_MAX + 1];
	const char *line = file->map + offset;
	const char *newline = memchr(line, '\n', FILE_HEAD_MAX);
	size_t len = newline ? (size_t) (newline - line) + 1 :
			       strnlen(line, FILE_HEAD_MAX);

	say("file offset %zu (%s): \"%s\"", offset, what,
	    quote(line, len, quoted, sizeof(quoted)));
}

/* Lets the initiator write into the mapped file, then reports and msyncs. */
static int serve_initiator(const struct fabric_res *res,
			   struct connection *conn,
			   const struct mapped_file *file)
{
	struct fid_mr *mr = NULL;
	char text[MSG_MAX];
	int ret;

	ret = register_buffer(res, conn->ep, file->map, REGION_SIZE,
			      FI_REMOTE_WRITE | FI_REMOTE_READ, REGION_MR_KEY,
			      FI_RMA_PMEM, &mr);
	if (!ret)
		say("file registered as persistent memory (FI_RMA_PMEM): "
		    "profile %s", fi_pmem_profile_str(res->pmem_ops->mr_profile(mr)));
	if (!ret)
		ret = send_region(res, conn, mr, file);
	if (!ret)
		ret = receive_text(conn, 0, "receiving the initiator's message",
				   text, sizeof(text));
	if (!ret)
		ret = receive_text(conn, 1, "receiving \"done\"", text,
				   sizeof(text));
	if (!ret && strcmp(text, DONE_TEXT)) {
		complain("expected \"%s\" from the initiator", DONE_TEXT);
		ret = -FI_EOTHER;
	}
	if (!ret) {
		print_file_line(file, 0, "plain fi_write: visible, not "
				"guaranteed durable");
		print_file_line(file, COMMIT_OFFSET, "FI_COMMIT_COMPLETE: "
				"durable, persisted by pmemverbs's agent");
	}
	close_fid(mr ? &mr->fid : NULL, "closing the file's memory region");
	return ret;
}

int run_target(const struct options *opts)
{
	struct mapped_file file = { .fd = -1 };
	struct fabric_res res = { 0 };
	struct connection conn = { 0 };
	struct fid_pep *pep = NULL;
	int ret;

	ret = map_region_file(opts->file, &file);
	if (!ret)
		ret = open_fabric_res(opts, &res);
	if (!ret)
		ret = start_listening(&res, &pep);
	if (!ret)
		say("listening on %s port %s, file %s (%d bytes), core: %s",
		    opts->addr, opts->port, file.path, REGION_SIZE,
		    res.core_prov);
	if (!ret)
		ret = accept_initiator(&res, &conn);
	if (!ret)
		say("connection from the initiator accepted");
	if (!ret)
		ret = serve_initiator(&res, &conn, &file);
	close_connection(&conn);
	close_fid(pep ? &pep->fid : NULL, "closing the passive endpoint");
	close_fabric_res(&res);
	unmap_region_file(&file);
	return ret;
}
