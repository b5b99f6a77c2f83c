/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: fi_getinfo for FI_EP_RDM with FI_RMA_PMEM, and the fi_info
 * translation between pmemverbs's RDM entries and ofi_rxm's (pmv_rdm.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmv_objects.h"
#include "pmv_rdm.h"

/* True for RDM hints that ask for FI_RMA_PMEM or FI_COMMIT_COMPLETE. */
bool pmv_rdm_hints_want_pmem(const struct fi_info *hints)
{
	if (!hints || !hints->ep_attr || hints->ep_attr->type != FI_EP_RDM)
		return false;
	return (hints->caps & FI_RMA_PMEM) ||
	       (hints->tx_attr && (hints->tx_attr->op_flags &
				   FI_COMMIT_COMPLETE));
}

/* Sets *name to PMV_RDM_MARK followed by the old name (or nothing). */
static int pmv_rdm_mark_name(char **name)
{
	size_t len = strlen(PMV_RDM_MARK) + (*name ? strlen(*name) : 0) + 1;
	char *marked = malloc(len);

	if (!marked)
		return -FI_ENOMEM;
	snprintf(marked, len, "%s%s", PMV_RDM_MARK, *name ? *name : "");
	free(*name);
	*name = marked;
	return 0;
}

/* The name without PMV_RDM_MARK (NULL if that leaves nothing); ENOMEM. */
static int pmv_rdm_unmark_name(char **name)
{
	char *rest;

	if (!*name || strncmp(*name, PMV_RDM_MARK, strlen(PMV_RDM_MARK)))
		return 0;
	rest = *name + strlen(PMV_RDM_MARK);
	rest = *rest ? strdup(rest) : NULL;
	if (!rest && (*name)[strlen(PMV_RDM_MARK)])
		return -FI_ENOMEM;
	free(*name);
	*name = rest;
	return 0;
}

static void pmv_rdm_set_pmem(struct fi_info *info, bool pmem)
{
	if (pmem) {
		info->caps |= FI_RMA_PMEM;
		info->tx_attr->caps |= info->tx_attr->caps ? FI_RMA_PMEM : 0;
		info->rx_attr->caps |= info->rx_attr->caps ? FI_RMA_PMEM : 0;
		return;
	}
	info->caps &= ~FI_RMA_PMEM;
	info->tx_attr->caps &= ~FI_RMA_PMEM;
	info->rx_attr->caps &= ~FI_RMA_PMEM;
	info->tx_attr->op_flags &= ~FI_COMMIT_COMPLETE;
}

/*
 * ofi_rxm's view of a pmemverbs RDM fi_info (or hints): no FI_RMA_PMEM or
 * FI_COMMIT_COMPLETE (rxm refuses caps it does not know), the stack's
 * name, and the domain name marked for pmemverbs MSG beneath.
 */
struct fi_info *pmv_rdm_info_to_rxm(const struct fi_info *info)
{
	struct fi_info *rxm = fi_dupinfo(info);

	if (!rxm || !pmv_info_complete(rxm))
		goto err;
	pmv_rdm_set_pmem(rxm, false);
	rxm->ep_attr->type = FI_EP_RDM;
	free(rxm->fabric_attr->prov_name);
	rxm->fabric_attr->prov_name = strdup(PMV_RDM_STACK);
	rxm->fabric_attr->fabric = NULL;
	rxm->domain_attr->domain = NULL;
	rxm->handle = NULL;
	if (!rxm->fabric_attr->prov_name ||
	    pmv_rdm_mark_name(&rxm->domain_attr->name))
		goto err;
	return rxm;
err:
	fi_freeinfo(rxm);
	return NULL;
}

/* Rewrites one ofi_rxm entry in place into a pmemverbs RDM entry. */
static int pmv_rdm_info_from_rxm(struct fi_info *info,
				 const struct fi_info *hints)
{
	free(info->fabric_attr->prov_name);
	info->fabric_attr->prov_name = NULL; /* libfabric names it pmemverbs */
	info->fabric_attr->fabric = NULL;
	info->domain_attr->domain = NULL;
	pmv_rdm_set_pmem(info, true);
	if (hints->tx_attr)
		info->tx_attr->op_flags |= hints->tx_attr->op_flags &
					   FI_COMMIT_COMPLETE;
	return pmv_rdm_unmark_name(&info->domain_attr->name);
}

static bool pmv_rdm_marked(const struct fi_info *info)
{
	return info && info->domain_attr && info->domain_attr->name &&
	       !strncmp(info->domain_attr->name, PMV_RDM_MARK,
			strlen(PMV_RDM_MARK));
}

/*
 * An fi_info (complete) ofi_rxm passed down with a marked domain name, in
 * place: the mark off, FI_RMA_PMEM asked; untouched without the mark.
 */
int pmv_rdm_unmark(struct fi_info *info)
{
	if (!pmv_rdm_marked(info))
		return 0;
	pmv_rdm_set_pmem(info, true);
	return pmv_rdm_unmark_name(&info->domain_attr->name);
}

/*
 * Hints rxm passed down with a marked domain name: a copy without the mark
 * that asks FI_RMA_PMEM (*out NULL when the name carries no mark).
 */
int pmv_rdm_unmark_hints(const struct fi_info *hints, struct fi_info **out)
{
	*out = NULL;
	if (!pmv_rdm_marked(hints))
		return 0;
	*out = fi_dupinfo(hints);
	if (!*out || !pmv_info_complete(*out) || pmv_rdm_unmark(*out)) {
		fi_freeinfo(*out);
		*out = NULL;
		return -FI_ENOMEM;
	}
	return 0;
}

/*
 * Marks the domain names of the MSG entries answering ofi_rxm's marked
 * hints: libfabric 2.x's rxm keeps only core entries whose domain name is
 * the one its hints asked for (ofi_check_info).
 */
int pmv_rdm_mark_entries(struct fi_info *list)
{
	for (struct fi_info *cur = list; cur; cur = cur->next)
		if (pmv_rdm_mark_name(&cur->domain_attr->name))
			return -FI_ENOMEM;
	return 0;
}

/* Frees the entries of list that cannot be rewritten; returns the rest. */
static struct fi_info *pmv_rdm_keep_entries(struct fi_info *list,
					    const struct fi_info *hints)
{
	struct fi_info *head = NULL, **tail = &head, *cur, *next;

	for (cur = list; cur; cur = next) {
		next = cur->next;
		cur->next = NULL;
		if (cur->ep_attr->type != FI_EP_RDM ||
		    pmv_rdm_info_from_rxm(cur, hints)) {
			fi_freeinfo(cur);
			continue;
		}
		*tail = cur;
		tail = &cur->next;
	}
	return head;
}

/* ofi_rxm's entries for rxm_hints, through the public fi_getinfo. */
static int pmv_rdm_rxm_getinfo(uint32_t version, const char *node,
			       const char *service, uint64_t flags,
			       const struct fi_info *rxm_hints,
			       struct fi_info **list)
{
	flags &= ~(PMV_OFI_CORE_PROV_ONLY | PMV_OFI_GETINFO_HIDDEN);
	return fi_getinfo(version, node, service, flags, rxm_hints, list);
}

/* True if an entry before end in list has this domain name. */
static bool pmv_rdm_name_seen(const struct fi_info *list,
			      const struct fi_info *end, const char *name)
{
	for (; list != end; list = list->next)
		if (!strcmp(list->domain_attr->name, name))
			return true;
	return false;
}

/*
 * ofi_rxm's entries with the mark, one query per domain name the plain
 * entries name (rxm 2.x keeps only core entries of the name it asked for),
 * appended to *tail.
 */
static int pmv_rdm_query_marked(uint32_t version, const char *node,
				const char *service, uint64_t flags,
				struct fi_info *rxm_hints,
				const struct fi_info *plain,
				struct fi_info ***tail)
{
	struct fi_info *got;

	for (const struct fi_info *cur = plain; cur; cur = cur->next) {
		if (pmv_rdm_name_seen(plain, cur, cur->domain_attr->name))
			continue;
		free(rxm_hints->domain_attr->name);
		rxm_hints->domain_attr->name = strdup(cur->domain_attr->name);
		if (!rxm_hints->domain_attr->name ||
		    pmv_rdm_mark_name(&rxm_hints->domain_attr->name))
			return -FI_ENOMEM;
		got = NULL;
		if (pmv_rdm_rxm_getinfo(version, node, service, flags,
					rxm_hints, &got))
			continue; /* that domain has no pmem entry */
		**tail = got;
		while (**tail)
			*tail = &(**tail)->next;
	}
	return 0;
}

/*
 * RDM entries with FI_RMA_PMEM: ofi_rxm's entries over pmemverbs MSG asked
 * with the marked domain name (so that the MSG attributes beneath are
 * those of pmem endpoints), with FI_RMA_PMEM.  Hints without a domain name
 * first learn the names from rxm's plain entries.
 */
int pmv_rdm_getinfo(uint32_t version, const char *node, const char *service,
		    uint64_t flags, const struct fi_info *hints,
		    struct fi_info **info)
{
	struct fi_info *rxm_hints = pmv_rdm_info_to_rxm(hints);
	struct fi_info *plain = NULL, *list = NULL, **tail = &list;
	int ret;

	if (!rxm_hints)
		return -FI_ENOMEM;
	free(rxm_hints->domain_attr->name); /* the plain query: every name */
	rxm_hints->domain_attr->name = (hints->domain_attr &&
		hints->domain_attr->name) ? strdup(hints->domain_attr->name) :
		NULL;
	ret = pmv_rdm_rxm_getinfo(version, node, service, flags, rxm_hints,
				  &plain);
	if (!ret)
		ret = pmv_rdm_query_marked(version, node, service, flags,
					   rxm_hints, plain, &tail);
	fi_freeinfo(plain);
	fi_freeinfo(rxm_hints);
	if (ret || !list) {
		PMV_INFO(FI_LOG_CORE, "%s: no RDM endpoint for these hints "
			 "(%s)\n", PMV_RDM_STACK, fi_strerror(ret ? -ret :
							       FI_ENODATA));
		fi_freeinfo(list);
		return ret ? ret : -FI_ENODATA;
	}
	*info = pmv_rdm_keep_entries(list, hints);
	return *info ? 0 : -FI_ENODATA;
}
