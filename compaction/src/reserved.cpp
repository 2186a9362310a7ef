// Reserved types and fields: runtime data a client could forge (a progress record, a batch mark) is refused.
#include <agentctx/compaction/reserved.hpp>

namespace agentctx::compaction {

bool is_reserved_custom_type(std::string_view custom_type) noexcept
{
    return custom_type.starts_with(reserved_custom_type_prefix);
}

bool is_reserved_field(std::string_view key) noexcept
{
    return key.starts_with(reserved_field_prefix);
}

result<void> check_client_entry(const boost::json::object& fields, diagnostics& diag)
{
    for (const auto& kv : fields)
        if (is_reserved_field(kv.key()))
        {
            diag.field = std::string(kv.key());
            diag.message = diag.field + ": reserved: top-level fields named '" +
                           std::string(reserved_field_prefix) + "*' are written only by the runtime";
            return errc::reserved_field;
        }
    const auto* type = fields.if_contains("type");
    if (!type || !type->is_string() ||
        (type->get_string() != "custom" && type->get_string() != "custom_message"))
        return {};
    const auto* custom_type = fields.if_contains("customType");
    if (!custom_type || !custom_type->is_string() || !is_reserved_custom_type(custom_type->get_string()))
        return {};
    diag.field = "customType";
    diag.message = "customType '" + std::string(custom_type->get_string()) +
                   "' is reserved: entries of the '" + std::string(reserved_custom_type_prefix) +
                   "*' types are written only by the runtime";
    return errc::reserved_type;
}

}  // namespace agentctx::compaction
