/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_pmem_probe -r ADDR PORT: connects to a pmemverbs target listening at
 * ADDR:PORT (an application's passive endpoint, opened with FI_RMA_PMEM),
 * waits for the profile table it pushes (the regions a commit can name,
 * each key's profile) and prints each key with the method commits to it
 * take over this connection.  The endpoint is this build's pmemverbs
 * (FI_PROVIDER_PATH names the plugin directory of the same build), whose
 * inbox holds the pushed table.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rdma/fi_cm.h>

#include "pmv.h"
#include "fi_pmem_probe.h"

#define PROBE_WAIT_S 5

struct probe_conn {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

/* Opens a pmemverbs FI_RMA_PMEM endpoint and connects it to addr:port. */
static int probe_connect(struct probe_conn *c, const char *addr,
			 const char *port)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_eq_attr eq_attr = { .size = 4, .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr cq_attr = { .size = 16 };
	struct fi_eq_cm_entry entry;
	uint32_t event;
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->caps = FI_MSG | FI_RMA | FI_RMA_PMEM;
	hints->ep_attr->type = FI_EP_MSG;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(PMV_PROV_NAME);
	ret = fi_getinfo(FI_VERSION(1, 17), addr, port, 0, hints, &c->info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	if ((ret = fi_fabric(c->info->fabric_attr, &c->fabric, NULL)) ||
	    (ret = fi_eq_open(c->fabric, &eq_attr, &c->eq, NULL)) ||
	    (ret = fi_domain(c->fabric, c->info, &c->domain, NULL)) ||
	    (ret = fi_cq_open(c->domain, &cq_attr, &c->cq, NULL)) ||
	    (ret = fi_endpoint(c->domain, c->info, &c->ep, NULL)) ||
	    (ret = fi_ep_bind(c->ep, &c->eq->fid, 0)) ||
	    (ret = fi_ep_bind(c->ep, &c->cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(c->ep)) ||
	    (ret = fi_connect(c->ep, c->info->dest_addr, NULL, 0)))
		return ret;
	ret = (int) fi_eq_sread(c->eq, &event, &entry, sizeof(entry),
				PROBE_WAIT_S * 1000, 0);
	if (ret < 0)
		return ret;
	return event == FI_CONNECTED ? 0 : -FI_ECONNREFUSED;
}

/* Reads the table the target pushed into the endpoint's inbox, progressing
 * the connection meanwhile, until it names a region or time is up. */
static bool probe_read_table(struct probe_conn *c, struct pmv_profiles *t)
{
	struct pmv_ep *ep = pmv_container_of(c->ep, struct pmv_ep, ep_fid);
	struct fi_cq_entry entry;
	time_t end = time(NULL) + PROBE_WAIT_S;

	do {
		(void) fi_cq_read(c->cq, &entry, 1);
		if (ep->inbox.profiles &&
		    pmv_profiles_decode(ep->inbox.profiles, PMV_PROFILES_SIZE,
					t) && t->count)
			return true;
	} while (time(NULL) < end);
	return false;
}

/* Prints each key of the table with its profile and its commits' method. */
static void probe_print_table(const struct pmv_profiles *t)
{
	for (unsigned i = 0; i < t->count; i++)
		printf("key %-12llu profile %-8s method %s\n",
		       (unsigned long long) t->e[i].key,
		       fi_pmem_profile_str(t->e[i].profile),
		       fi_pmem_method_str(pmv_probe_method(
			       t->e[i].profile, t->e[i].target_flags, NULL)));
}

static void probe_close(struct probe_conn *c)
{
	struct fid *fids[] = { c->ep ? &c->ep->fid : NULL,
			       c->cq ? &c->cq->fid : NULL,
			       c->domain ? &c->domain->fid : NULL,
			       c->eq ? &c->eq->fid : NULL,
			       c->fabric ? &c->fabric->fid : NULL };

	for (size_t i = 0; i < sizeof(fids) / sizeof(fids[0]); i++)
		if (fids[i])
			fi_close(fids[i]);
	fi_freeinfo(c->info);
}

int pmv_probe_remote(const char *addr, const char *port)
{
	struct probe_conn c = { 0 };
	struct pmv_profiles t;
	int ret = probe_connect(&c, addr, port);

	if (ret) {
		fprintf(stderr, "connecting to %s:%s through pmemverbs: %s "
			"(a target listening with FI_RMA_PMEM? FI_PROVIDER_PATH "
			"naming this build's plugin? set FI_LOG_LEVEL=warn to "
			"see why)\n", addr, port,
			fi_strerror(-ret));
		probe_close(&c);
		return 1;
	}
	if (!probe_read_table(&c, &t)) {
		fprintf(stderr, "%s:%s pushed no profile table naming a region "
			"within %d s (FI_PMEMVERBS_PUSH_PROFILES=0 at either "
			"side, or no region registered)\n", addr, port,
			PROBE_WAIT_S);
		probe_close(&c);
		return 1;
	}
	printf("target:          %s:%s (registration generation %u, %u "
	       "regions)\n", addr, port, t.mr_gen, t.count);
	probe_print_table(&t);
	probe_close(&c);
	return 0;
}
