"""The typed setters of `GGUFWriter` as a table: a setter's name (without `add_`) and the key it
writes, by the kind of value it takes.

A key with `{arch}` is formatted with the writer's architecture; a key with `{id}` takes the
setter's first argument as the id (the value is the second). Kinds ending in `_enum` take an
enum member and write its `.value`.
"""

from __future__ import annotations

SETTERS: dict[str, str] = {
    "string": """
        type                        general.type
        sampling_sequence           general.sampling.sequence
        name                        general.name
        author                      general.author
        version                     general.version
        organization                general.organization
        finetune                    general.finetune
        basename                    general.basename
        description                 general.description
        quantized_by                general.quantized_by
        size_label                  general.size_label
        license                     general.license
        license_name                general.license.name
        license_link                general.license.link
        url                         general.url
        doi                         general.doi
        uuid                        general.uuid
        repo_url                    general.repo_url
        source_url                  general.source.url
        source_doi                  general.source.doi
        source_uuid                 general.source.uuid
        source_repo_url             general.source.repo_url
        tensor_data_layout          {arch}.tensor_data_layout
        tokenizer_model             tokenizer.ggml.model
        tokenizer_pre               tokenizer.ggml.pre
        clip_projector_type         clip.projector_type
        clip_vision_projector_type  clip.vision.projector_type
        clip_audio_projector_type   clip.audio.projector_type
    """,
    "uint32": """
        quantization_version               general.quantization_version
        file_type                          general.file_type
        base_model_count                   general.base_model.count
        dataset_count                      general.dataset.count
        vocab_size                         {arch}.vocab_size
        context_length                     {arch}.context_length
        embedding_length                   {arch}.embedding_length
        embedding_length_out               {arch}.embedding_length_out
        features_length                    {arch}.features_length
        posnet_embedding_length            {arch}.posnet.embedding_length
        posnet_block_count                 {arch}.posnet.block_count
        convnext_embedding_length          {arch}.convnext.embedding_length
        convnext_block_count               {arch}.convnext.block_count
        shortconv_l_cache                  {arch}.shortconv.l_cache
        block_count                        {arch}.block_count
        leading_dense_block_count          {arch}.leading_dense_block_count
        full_attention_interval            {arch}.full_attention_interval
        expert_feed_forward_length         {arch}.expert_feed_forward_length
        expert_shared_feed_forward_length  {arch}.expert_shared_feed_forward_length
        expert_chunk_feed_forward_length   {arch}.expert_chunk_feed_forward_length
        decoder_start_token_id             {arch}.decoder_start_token_id
        decoder_block_count                {arch}.decoder_block_count
        embedding_length_per_layer_input   {arch}.embedding_length_per_layer_input
        altup_active_idx                   {arch}.altup.active_idx
        altup_num_inputs                   {arch}.altup.num_inputs
        key_length                         {arch}.attention.key_length
        value_length                       {arch}.attention.value_length
        key_length_mla                     {arch}.attention.key_length_mla
        value_length_mla                   {arch}.attention.value_length_mla
        key_length_swa                     {arch}.attention.key_length_swa
        value_length_swa                   {arch}.attention.value_length_swa
        indexer_head_count                 {arch}.attention.indexer.head_count
        indexer_key_length                 {arch}.attention.indexer.key_length
        indexer_top_k                      {arch}.attention.indexer.top_k
        shared_kv_layers                   {arch}.attention.shared_kv_layers
        expert_count                       {arch}.expert_count
        expert_used_count                  {arch}.expert_used_count
        expert_shared_count                {arch}.expert_shared_count
        expert_group_count                 {arch}.expert_group_count
        expert_group_used_count            {arch}.expert_group_used_count
        experts_per_group                  {arch}.experts_per_group
        moe_every_n_layers                 {arch}.moe_every_n_layers
        moe_latent_size                    {arch}.moe_latent_size
        nextn_predict_layers               {arch}.nextn_predict_layers
        rescale_every_n_layers             {arch}.rescale_every_n_layers
        time_mix_extra_dim                 {arch}.time_mix_extra_dim
        time_decay_extra_dim               {arch}.time_decay_extra_dim
        wkv_head_size                      {arch}.wkv.head_size
        token_shift_count                  {arch}.token_shift_count
        interleave_moe_layer_step          {arch}.interleave_moe_layer_step
        group_norm_groups                  {arch}.attention.group_norm_groups
        q_lora_rank                        {arch}.attention.q_lora_rank
        kv_lora_rank                       {arch}.attention.kv_lora_rank
        decay_lora_rank                    {arch}.attention.decay_lora_rank
        iclr_lora_rank                     {arch}.attention.iclr_lora_rank
        value_residual_mix_lora_rank       {arch}.attention.value_residual_mix_lora_rank
        gate_lora_rank                     {arch}.attention.gate_lora_rank
        relative_attn_buckets_count        {arch}.attention.relative_buckets_count
        sliding_window                     {arch}.attention.sliding_window
        attn_temperature_length            {arch}.attention.temperature_length
        num_deepstack_layers               {arch}.n_deepstack_layers
        rope_dimension_count               {arch}.rope.dimension_count
        rope_dimension_count_swa           {arch}.rope.dimension_count_swa
        rope_scaling_orig_ctx_len          {arch}.rope.scaling.original_context_length
        ssm_conv_kernel                    {arch}.ssm.conv_kernel
        ssm_inner_size                     {arch}.ssm.inner_size
        ssm_state_size                     {arch}.ssm.state_size
        ssm_time_step_rank                 {arch}.ssm.time_step_rank
        ssm_group_count                    {arch}.ssm.group_count
        kda_head_dim                       {arch}.kda.head_dim
        token_type_count                   tokenizer.ggml.token_type_count
        bos_token_id                       tokenizer.ggml.bos_token_id
        eos_token_id                       tokenizer.ggml.eos_token_id
        unk_token_id                       tokenizer.ggml.unknown_token_id
        sep_token_id                       tokenizer.ggml.seperator_token_id
        pad_token_id                       tokenizer.ggml.padding_token_id
        mask_token_id                      tokenizer.ggml.mask_token_id
        eot_token_id                       tokenizer.ggml.eot_token_id
        eom_token_id                       tokenizer.ggml.eom_token_id
        vision_projection_dim              clip.vision.projection_dim
        vision_patch_size                  clip.vision.patch_size
        vision_embedding_length            clip.vision.embedding_length
        vision_feed_forward_length         clip.vision.feed_forward_length
        vision_block_count                 clip.vision.block_count
        vision_head_count                  clip.vision.attention.head_count
        vision_image_size                  clip.vision.image_size
        vision_max_pixels                  clip.vision.image_max_pixels
        vision_min_pixels                  clip.vision.image_min_pixels
        vision_preproc_max_tiles           clip.vision.preproc_max_tiles
        vision_preproc_min_tiles           clip.vision.preproc_min_tiles
        vision_preproc_image_size          clip.vision.preproc_image_size
        vision_spatial_merge_size          clip.vision.spatial_merge_size
        vision_projector_scale_factor      clip.vision.projector.scale_factor
        vision_n_wa_pattern                clip.vision.n_wa_pattern
        vision_window_size                 clip.vision.window_size
        vision_sam_layers_count            clip.vision.sam.block_count
        vision_sam_embedding_length        clip.vision.sam.embedding_length
        vision_sam_head_count              clip.vision.sam.head_count
        audio_projection_dim               clip.audio.projection_dim
        audio_embedding_length             clip.audio.embedding_length
        audio_feed_forward_length          clip.audio.feed_forward_length
        audio_block_count                  clip.audio.block_count
        audio_head_count                   clip.audio.attention.head_count
        audio_num_mel_bins                 clip.audio.num_mel_bins
        audio_stack_factor                 clip.audio.projector.stack_factor
        audio_chunk_size                   clip.audio.chunk_size
        audio_conv_kernel_size             clip.audio.conv_kernel_size
        audio_max_pos_emb                  clip.audio.max_pos_emb
        audio_projector_window_size        clip.audio.projector.window_size
        audio_projector_downsample_rate    clip.audio.projector.downsample_rate
        audio_projector_head_count         clip.audio.projector.head_count
    """,
    "int32": """
        sampling_top_k           general.sampling.top_k
        sampling_penalty_last_n  general.sampling.penalty_last_n
        sampling_mirostat        general.sampling.mirostat
    """,
    "float32": """
        sampling_top_p                  general.sampling.top_p
        sampling_min_p                  general.sampling.min_p
        sampling_xtc_probability        general.sampling.xtc_probability
        sampling_xtc_threshold          general.sampling.xtc_threshold
        sampling_temp                   general.sampling.temp
        sampling_penalty_repeat         general.sampling.penalty_repeat
        sampling_mirostat_tau           general.sampling.mirostat_tau
        sampling_mirostat_eta           general.sampling.mirostat_eta
        max_alibi_bias                  {arch}.attention.max_alibi_bias
        clamp_kqv                       {arch}.attention.clamp_kqv
        logit_scale                     {arch}.logit_scale
        attn_logit_softcapping          {arch}.attn_logit_softcapping
        router_logit_softcapping        {arch}.router_logit_softcapping
        final_logit_softcapping         {arch}.final_logit_softcapping
        expert_weights_scale            {arch}.expert_weights_scale
        expert_group_scale              {arch}.expert_group_scale
        residual_scale                  {arch}.residual_scale
        embedding_scale                 {arch}.embedding_scale
        layer_norm_eps                  {arch}.attention.layer_norm_epsilon
        layer_norm_rms_eps              {arch}.attention.layer_norm_rms_epsilon
        group_norm_eps                  {arch}.attention.group_norm_epsilon
        rope_freq_base_swa              {arch}.rope.freq_base_swa
        attention_scale                 {arch}.attention.scale
        attn_output_scale               {arch}.attention.output_scale
        attn_temperature_scale          {arch}.attention.temperature_scale
        rope_freq_base                  {arch}.rope.freq_base
        rope_scaling_factor             {arch}.rope.scaling.factor
        rope_scaling_alpha              {arch}.rope.scaling.alpha
        rope_scaling_attn_factors       {arch}.rope.scaling.attn_factor
        rope_scaling_yarn_log_mul       {arch}.rope.scaling.yarn_log_multiplier
        rope_scaling_yarn_ext_factor    {arch}.rope.scaling.yarn_ext_factor
        rope_scaling_yarn_attn_factor   {arch}.rope.scaling.yarn_attn_factor
        rope_scaling_yarn_beta_fast     {arch}.rope.scaling.yarn_beta_fast
        rope_scaling_yarn_beta_slow     {arch}.rope.scaling.yarn_beta_slow
        vision_attention_layernorm_eps  clip.vision.attention.layer_norm_epsilon
        audio_attention_layernorm_eps   clip.audio.attention.layer_norm_epsilon
    """,
    "string_id": """
        base_model_name          general.base_model.{id}.name
        base_model_author        general.base_model.{id}.author
        base_model_version       general.base_model.{id}.version
        base_model_organization  general.base_model.{id}.organization
        base_model_description   general.base_model.{id}.description
        base_model_url           general.base_model.{id}.url
        base_model_doi           general.base_model.{id}.doi
        base_model_uuid          general.base_model.{id}.uuid
        base_model_repo_url      general.base_model.{id}.repo_url
        dataset_name             general.dataset.{id}.name
        dataset_author           general.dataset.{id}.author
        dataset_version          general.dataset.{id}.version
        dataset_organization     general.dataset.{id}.organization
        dataset_description      general.dataset.{id}.description
        dataset_url              general.dataset.{id}.url
        dataset_doi              general.dataset.{id}.doi
        dataset_uuid             general.dataset.{id}.uuid
        dataset_repo_url         general.dataset.{id}.repo_url
    """,
    "array": """
        tags                        general.tags
        languages                   general.languages
        activation_sparsity_scale   {arch}.activation_sparsity_scale
        swiglu_clamp_exp            {arch}.swiglu_clamp_exp
        swiglu_clamp_shexp          {arch}.swiglu_clamp_shexp
        rope_dimension_sections     {arch}.rope.dimension_sections
        token_list                  tokenizer.ggml.tokens
        token_merges                tokenizer.ggml.merges
        token_types                 tokenizer.ggml.token_type
        token_scores                tokenizer.ggml.scores
        precompiled_charsmap        tokenizer.ggml.precompiled_charsmap
        classifier_output_labels    {arch}.classifier.output_labels
        vision_image_mean           clip.vision.image_mean
        vision_image_std            clip.vision.image_std
        vision_wa_layer_indexes     clip.vision.wa_layer_indexes
        vision_is_deepstack_layers  clip.vision.is_deepstack_layers
        xielu_alpha_p               xielu.alpha_p
        xielu_alpha_n               xielu.alpha_n
        xielu_beta                  xielu.beta
        xielu_eps                   xielu.eps
    """,
    "bool": """
        parallel_residual         {arch}.use_parallel_residual
        expert_weights_norm       {arch}.expert_weights_norm
        swin_norm                 {arch}.swin_norm
        causal_attention          {arch}.attention.causal
        rope_scaling_finetuned    {arch}.rope.scaling.finetuned
        ssm_dt_b_c_rms            {arch}.ssm.dt_b_c_rms
        add_bos_token             tokenizer.ggml.add_bos_token
        add_eos_token             tokenizer.ggml.add_eos_token
        add_sep_token             tokenizer.ggml.add_sep_token
        add_space_prefix          tokenizer.ggml.add_space_prefix
        remove_extra_whitespaces  tokenizer.ggml.remove_extra_whitespaces
        clip_has_vision_encoder   clip.has_vision_encoder
        clip_has_audio_encoder    clip.has_audio_encoder
        vision_use_gelu           clip.use_gelu
        vision_use_silu           clip.use_silu
        diffusion_shift_logits    diffusion.shift_logits
    """,
    "uint32_enum": """
        expert_gating_func  {arch}.expert_gating_func
        pooling_type        {arch}.pooling_type
    """,
    "string_enum": """
        rope_scaling_type  {arch}.rope.scaling.type
    """,
}



def setters() -> list[tuple[str, str, str]]:
    """`(kind, name, key)` for every row of the table."""
    rows = []
    for kind, text in SETTERS.items():
        for line in text.splitlines():
            line = line.strip()
            if line:
                name, key = line.split()
                rows.append((kind, name, key))
    return rows
