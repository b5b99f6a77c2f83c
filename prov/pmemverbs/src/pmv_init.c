/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: provider entry point and parameters.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pmv_objects.h"
#include "pmv_timeline.h"

struct pmv_params pmv_params;

/* libfabric unloads the plugin: no agent thread may still run its code,
 * nor a thread-exit destructor of its (pmv_wake_fini). */
static void pmv_cleanup(void)
{
	pmv_agent_stop_all();
	pmv_wake_fini();
}

struct fi_provider pmv_prov = {
	.name = PMV_PROV_NAME,
	.version = PMV_PROV_VERSION,
	.fi_version = PMV_FI_VERSION,
	.getinfo = pmv_getinfo,
	.fabric = pmv_fabric_open,
	.cleanup = pmv_cleanup,
};

/* Declares every pmemverbs knob so that `fi_info -e` lists it with its help. */
static void pmv_define_params(void)
{
	fi_param_define(&pmv_prov, "core_prov", FI_PARAM_STRING,
			"Core provider pmemverbs layers on for its MSG endpoints "
			"(RDM endpoints come from ofi_rxm layered on pmemverbs): "
			"'verbs' or 'tcp'. Default: verbs when a verbs device "
			"is usable, tcp otherwise.");
	fi_param_define(&pmv_prov, "wsp", FI_PARAM_BOOL,
			"Declare that this target's persistence domain is the "
			"whole system, NIC buffers included (WSP); it cannot "
			"be detected. Applies to byte and cache-line "
			"granularity regions, never to page-cache files. "
			"Default: no.");
	fi_param_define(&pmv_prov, "ddio", FI_PARAM_BOOL,
			"Declare whether inbound RDMA writes land in this "
			"target's CPU caches (DDIO). Set 0 only where DDIO is "
			"really off: DMP regions may then use read_flush over "
			"verbs. Always on for the tcp core, which copies with "
			"the CPU. Default: yes.");
	fi_param_define(&pmv_prov, "method", FI_PARAM_STRING,
			"How commits are made durable: auto (the fastest "
			"method correct for the key's profile; fenced commits "
			"on agent profiles use send), agent, read_flush, "
			"completion or send (the data inside the agent's "
			"request, for commits whose data fits one). A method "
			"incorrect for the profile is refused (-FI_EOPNOTSUPP), "
			"never used. FI_IMMED commits, and commits to a key "
			"whose profile is not known yet (from the peer's "
			"pushed profile table or an earlier acknowledgement), "
			"go through the agent. Default: auto.");
	fi_param_define(&pmv_prov, "extent_limit", FI_PARAM_INT,
			"Ranges kept per endpoint and key between commits "
			"before neighbours coalesce; past it two ranges merge "
			"only over pages a write touched (or scope_gap bytes); "
			"ranges a commit's request cannot carry go ahead in "
			"internal requests. 1 to 16, default 4.");
	fi_param_define(&pmv_prov, "scope_gap", FI_PARAM_INT,
			"Bytes nobody wrote that two ranges of a key's scope "
			"may still merge over, past extent_limit (ranges within "
			"pages a write touched always may). A commit never "
			"persists a page no write touched beyond this bound, so "
			"a sparse file's holes stay holes. 0 to 1048576, "
			"default 0.");
	fi_param_define(&pmv_prov, "fill_holes", FI_PARAM_BOOL,
			"At fi_mr_reg(FI_RMA_PMEM) of a shared file mapping, "
			"allocate the holes of the registered range (the file's "
			"size kept); a file system that cannot hold them fails "
			"the registration with FI_ENOSPC, where a write into a "
			"hole would later kill the target with SIGBUS. "
			"Default: yes.");
	fi_param_define(&pmv_prov, "agent_spin_us", FI_PARAM_INT,
			"Microseconds the target agent keeps polling for "
			"commit requests after the last one before it sleeps "
			"(over tcp on the core CQs' fds, with no timeout). "
			"Default 200.");
	fi_param_define(&pmv_prov, "agent_thread", FI_PARAM_BOOL,
			"Over tcp, run a target agent thread per domain with "
			"FI_RMA_PMEM endpoints, which serves the peers' commit "
			"requests while the application does not progress. "
			"0: no thread; requests are served only while the "
			"application reads or waits on its endpoints' CQs or "
			"counters (FI_PROGRESS_MANUAL), so a target that reads "
			"nothing, or waits only in fi_eq_sread, leaves its "
			"peers' commits waiting until they fail with "
			"FI_ETIMEDOUT. Over verbs the thread always runs. "
			"Default: yes.");
	fi_param_define(&pmv_prov, "sread_spin_us", FI_PARAM_INT,
			"Over tcp, microseconds an fi_cq_sread on a CQ (or an "
			"fi_cntr_wait on a counter) with FI_RMA_PMEM endpoints "
			"keeps polling after bytes last woke it or it last "
			"served a commit request, before it sleeps again (the "
			"next commit "
			"request comes a round trip later, and a sleeping core "
			"wakes slower). 0: never. Default 50.");
	fi_param_define(&pmv_prov, "join_request", FI_PARAM_BOOL,
			"Over the tcp core, toward a peer whose receive CQ "
			"carries remote CQ data (FI_CQ_FORMAT_DATA or "
			"TAGGED; its CM header offers a gate), send an agent "
			"commit's data and its commit request as one write "
			"with remote CQ data: the peer serves the request once "
			"that write's completion is read (fi_cq(3): the data "
			"is then available), one message per commit; the agent "
			"is then the method for every profile. Elsewhere, and "
			"with 0, two writes ordered by FI_ORDER_WAW. "
			"Default: yes.");
	fi_param_define(&pmv_prov, "push_profiles", FI_PARAM_BOOL,
			"Push this side's profile table (the profile of each "
			"region a commit can name) into the peer's inbox when "
			"a connection is established and after each "
			"registration or close, and choose a key's method "
			"from the peer's table: a key's first commit then "
			"takes its fastest method instead of going to the "
			"agent to learn the profile. 0: neither. Default: yes.");
	fi_param_define(&pmv_prov, "delivery_is_commit", FI_PARAM_BOOL,
			"On FI_RMA_PMEM endpoints, make a write with "
			"FI_DELIVERY_COMPLETE (the flag of fi_writemsg, or in "
			"the endpoint's default op_flags, from fi_endpoint or "
			"FI_SETOPSFLAG) a commit: it completes once its data and the earlier "
			"writes to its key are durable, as with "
			"FI_COMMIT_COMPLETE. 0: such a write is a plain write "
			"that completes once placed. Default: no.");
	fi_param_define(&pmv_prov, "peer_timeout_ms", FI_PARAM_INT,
			"Milliseconds an initiator waits for an answer from "
			"the target (an ack, or the completion of its own "
			"data) while commits are in flight; then every "
			"commit of the endpoint fails with FI_ETIMEDOUT and "
			"the endpoint takes no more (a frozen, unreachable or "
			"not serving target). A dead connection is found "
			"sooner, by the probe; an answered probe does not "
			"count (an RDMA device answers it for a frozen "
			"process). 0: never. Default 10000.");
	fi_param_define(&pmv_prov, "peer_probe_ms", FI_PARAM_INT,
			"Milliseconds without an answer from the target, "
			"while commits are in flight, after which the "
			"initiator reads one word of the target's inbox to "
			"learn whether the connection still carries anything "
			"(a dead connection fails every commit at once). "
			"0: never. Default 100.");
	fi_param_define(&pmv_prov, "bad_request_ms", FI_PARAM_INT,
			"Milliseconds a request slot of the target's inbox may "
			"hold bytes that are not a whole, valid request for "
			"the sequence number expected (a request still "
			"arriving, or a corrupt, malformed or out-of-sequence "
			"one) before the agent refuses it: it acks that "
			"sequence number with an error (the commit fails with "
			"FI_EINVAL), warns, and serves the next slot instead "
			"of waiting for ever. A whole gated request waiting "
			"for its write's completion to be read waits "
			"FI_PMEMVERBS_PEER_TIMEOUT_MS instead. Default 100.");
}

/* FI_PMEMVERBS_METHOD as a method; NONE stands for auto. */
static enum fi_pmem_method pmv_parse_method(const char *name)
{
	static const enum fi_pmem_method methods[] = {
		FI_PMEM_METHOD_AGENT, FI_PMEM_METHOD_READ_FLUSH,
		FI_PMEM_METHOD_COMPLETION, FI_PMEM_METHOD_SEND,
	};
	size_t i;

	if (!name || !*name || !strcasecmp(name, "auto"))
		return FI_PMEM_METHOD_NONE;
	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (!strcasecmp(name, fi_pmem_method_str(methods[i])))
			return methods[i];
	PMV_WARN(FI_LOG_CORE, "FI_PMEMVERBS_METHOD=%s is not a method: "
		 "pmemverbs offers no endpoint (fi_getinfo finds none) until "
		 "it is auto, agent, read_flush, completion or send\n", name);
	pmv_params.config_error = -FI_EINVAL;
	return FI_PMEM_METHOD_NONE;
}

/* Reads a boolean parameter; a value that is not one is a configuration
 * error (libfabric would keep the default silently), an empty one the
 * default. */
static void pmv_get_bool(const char *name, int *value)
{
	char env[64] = "FI_PMEMVERBS_";
	const char *raw;
	size_t i, n = strlen(env);

	for (i = 0; name[i] && n + i < sizeof(env) - 1; i++)
		env[n + i] = (char) toupper((unsigned char) name[i]);
	env[n + i] = '\0';
	raw = getenv(env);
	if (!raw || !*raw || /* set but empty: the default, as when unset */
	    fi_param_get_bool(&pmv_prov, name, value) != -FI_EINVAL)
		return;
	PMV_WARN(FI_LOG_CORE, "%s=%s is not a boolean: pmemverbs offers no "
		 "endpoint (fi_getinfo finds none) until it is 0, 1, yes, no, "
		 "true, false, on or off\n", env, raw);
	pmv_params.config_error = -FI_EINVAL;
}

/* Reads the parameters once; later getinfo calls use the cached values. */
static void pmv_read_params(void)
{
	char *core = NULL, *method = NULL;

	pmv_params.config_error = 0;
	if (!fi_param_get_str(&pmv_prov, "core_prov", &core) && core && *core)
		pmv_params.core_prov = core;
	pmv_params.extent_limit = 4;
	pmv_params.agent_spin_us = 200;
	pmv_params.agent_thread = 1;
	pmv_params.sread_spin_us = 50;
	pmv_params.ddio = 1;
	pmv_params.peer_timeout_ms = 10000;
	pmv_params.peer_probe_ms = 100;
	pmv_params.bad_request_ms = 100;
	pmv_params.join_request = PMV_JOIN_REQUEST_DEFAULT;
	pmv_params.fill_holes = 1;
	pmv_params.push_profiles = 1;
	pmv_get_bool("wsp", &pmv_params.wsp);
	pmv_get_bool("ddio", &pmv_params.ddio);
	fi_param_get_str(&pmv_prov, "method", &method);
	pmv_params.method = pmv_parse_method(method);
	fi_param_get_int(&pmv_prov, "extent_limit", &pmv_params.extent_limit);
	fi_param_get_int(&pmv_prov, "scope_gap", &pmv_params.scope_gap);
	pmv_get_bool("fill_holes", &pmv_params.fill_holes);
	if (pmv_params.scope_gap < 0 || pmv_params.scope_gap > 1048576) {
		PMV_WARN(FI_LOG_CORE, "FI_PMEMVERBS_SCOPE_GAP=%d is outside 0 "
			 "to 1048576: pmemverbs offers no endpoint (fi_getinfo "
			 "finds none) until it is inside\n", pmv_params.scope_gap);
		pmv_params.config_error = -FI_EINVAL;
	}
	fi_param_get_int(&pmv_prov, "agent_spin_us", &pmv_params.agent_spin_us);
	fi_param_get_int(&pmv_prov, "sread_spin_us", &pmv_params.sread_spin_us);
	pmv_get_bool("agent_thread", &pmv_params.agent_thread);
	fi_param_get_int(&pmv_prov, "peer_timeout_ms",
			 &pmv_params.peer_timeout_ms);
	fi_param_get_int(&pmv_prov, "peer_probe_ms", &pmv_params.peer_probe_ms);
	pmv_get_bool("join_request", &pmv_params.join_request);
	pmv_get_bool("push_profiles", &pmv_params.push_profiles);
	fi_param_get_int(&pmv_prov, "bad_request_ms",
			 &pmv_params.bad_request_ms);
	pmv_get_bool("delivery_is_commit", &pmv_params.delivery_is_commit);
	pmv_fault_read_params();
}

FI_EXT_INI
{
	pmv_define_params();
	pmv_fault_define_params();
	pmv_timeline_init();
	pmv_read_params();
	return &pmv_prov;
}
