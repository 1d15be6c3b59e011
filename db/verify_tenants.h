// Verification of a collection's tenant metadata (db/verify.cc calls these; shoal/verify.h):
// the durable owner and grant rows against the records, and the in-memory access table
// against the rows.
#ifndef SHOAL_DB_VERIFY_TENANTS_H_
#define SHOAL_DB_VERIFY_TENANTS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "shoal/types.h"
#include "storage/records/record_store.h"
#include "tenants/access_table.h"
#include "tenants/tenant_tree.h"

namespace shoal::db {

// The tenant rows of one collection as the durable check read them.
struct TenantRowsView {
  absl::flat_hash_map<uint64_t, tenants::TenantId> owner;                // id -> owner
  absl::flat_hash_map<uint64_t, std::vector<tenants::TenantId>> grants;  // id -> grantees
  absl::flat_hash_map<tenants::TenantId, std::string> names;
};

using ProblemFn = std::function<void(std::string)>;

// Reads the collection's tenant rows and reports each that names a record that does not exist
// (`records`: every live internal id), a tenant that does not exist, a second owner, or a grant
// to the owner; also tenant rows sharing an id. Fills *view. Returns I/O errors only.
absl::Status CheckTenantRows(storage::RecordStore* store, uint32_t collection_id,
                             const absl::flat_hash_map<uint64_t, Key>& records,
                             const ProblemFn& problem, TenantRowsView* view);

// The access table that answers tenant reads holds exactly the durable rows.
void CheckAccessTable(const tenants::AccessTable& access, const TenantRowsView& view,
                      const ProblemFn& problem);

// Each tenant's sub-tree (tenants/tenant_tree.h) holds exactly the ids the access table lets
// it see: node counts right, no false negative (an id in no bucket), no shortlist over the cap.
void CheckTenantTree(const tenants::TenantTree& tree, const tenants::AccessTable& access,
                     const TenantRowsView& view, const ProblemFn& problem);

}  // namespace shoal::db

#endif  // SHOAL_DB_VERIFY_TENANTS_H_
